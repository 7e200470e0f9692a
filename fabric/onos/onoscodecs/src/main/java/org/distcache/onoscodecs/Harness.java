package org.distcache.onoscodecs;

import java.io.File;
import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import org.onosproject.codec.JsonCodec;
import org.onosproject.codec.impl.CodecManager;
import org.onosproject.net.DeviceId;
import org.onosproject.net.config.basics.BasicDeviceConfig;
import org.onosproject.net.flow.FlowRule;
import org.onosproject.net.flow.criteria.Criterion;
import org.onosproject.net.flow.instructions.Instruction;
import org.onosproject.net.pi.model.PiTableId;

/**
 * Decodes request bodies of the onos fabric driver with ONOS 2.7.0's own
 * JSON codecs, the way ONOS's REST resources decode them.
 *
 * <p>Usage: {@code java -cp ... org.distcache.onoscodecs.Harness cases.json}.
 * cases.json is an array of {"name", "kind", "appId", "body"}; kind is
 * "flows" (POST /flows?appId=...), "flowIds" (DELETE /flows) or "netcfg"
 * (POST /network/configuration). For each case one JSON line goes to
 * standard output: {"name", "ok", "error", "encoded"}, where encoded is
 * ONOS's own encoding of the decoded flow rules (what GET /flows returns
 * of them). The exit status is 0 when every case was read, whatever the
 * verdicts.
 */
public final class Harness {

    private Harness() {
    }

    public static void main(String[] args) throws IOException {
        if (args.length != 1) {
            System.err.println("usage: Harness cases.json");
            System.exit(2);
        }
        ObjectMapper mapper = new ObjectMapper();
        JsonNode cases = mapper.readTree(new File(args[0]));
        if (!cases.isArray()) {
            System.err.println("cases must be a JSON array");
            System.exit(2);
        }
        CodecManager codecs = new CodecManager();
        codecs.activate();
        Context context = new Context(codecs, mapper, new Core());
        for (JsonNode c : cases) {
            ObjectNode verdict = mapper.createObjectNode();
            verdict.put("name", c.path("name").asText());
            try {
                JsonNode encoded = check(context, c.path("kind").asText(), c.path("appId").asText(null), c.path("body"));
                verdict.put("ok", true);
                if (encoded != null) {
                    verdict.set("encoded", encoded);
                }
            } catch (RuntimeException e) {
                verdict.put("ok", false);
                verdict.put("error", e.getClass().getSimpleName() + ": " + e.getMessage());
            }
            System.out.println(mapper.writeValueAsString(verdict));
        }
    }

    private static JsonNode check(Context context, String kind, String appId, JsonNode body) {
        switch (kind) {
            case "flows":
                return flows(context, appId, body);
            case "flowIds":
                flowIds(body);
                return null;
            case "netcfg":
                netcfg(context.mapper(), body);
                return null;
            default:
                throw new IllegalArgumentException("unknown kind " + kind);
        }
    }

    /** As FlowsWebResource.createFlows, then insists on PI tables, matches and actions. */
    private static JsonNode flows(Context context, String appId, JsonNode body) {
        JsonNode flows = body.get("flows");
        if (flows == null || !flows.isArray()) {
            throw new IllegalArgumentException("flows array required");
        }
        if (appId != null) {
            flows.forEach(f -> ((ObjectNode) f).put("appId", appId));
        }
        JsonCodec<FlowRule> codec = context.codec(FlowRule.class);
        List<FlowRule> rules = codec.decode((ArrayNode) flows, context);
        ArrayNode encoded = context.mapper().createArrayNode();
        for (FlowRule rule : rules) {
            if (!(rule.table() instanceof PiTableId)) {
                throw new IllegalArgumentException("table " + rule.table() + " is not a PI table");
            }
            for (Criterion c : rule.selector().criteria()) {
                if (c.type() != Criterion.Type.PROTOCOL_INDEPENDENT) {
                    throw new IllegalArgumentException("criterion " + c + " is not protocol-independent");
                }
            }
            List<Instruction> instructions = rule.treatment().allInstructions();
            if (instructions.size() != 1 || instructions.get(0).type() != Instruction.Type.PROTOCOL_INDEPENDENT) {
                throw new IllegalArgumentException("treatment " + rule.treatment() + " is not one PI action");
            }
            encoded.add(codec.encode(rule, context));
        }
        return encoded;
    }

    /** As FlowsWebResource.deleteFlows reads its body. */
    private static void flowIds(JsonNode body) {
        JsonNode flows = body.get("flows");
        if (flows == null || !flows.isArray()) {
            throw new IllegalArgumentException("flows array required");
        }
        for (JsonNode f : flows) {
            DeviceId.deviceId(required(f, "deviceId").asText());
            JsonNode id = required(f, "flowId");
            if (!id.isTextual() && !id.isNumber() || !id.asText().matches("-?[0-9]+")) {
                throw new IllegalArgumentException("flowId " + id + " is not a number");
            }
        }
    }

    /**
     * As NetworkConfigWebResource.upload with only the basic device
     * configuration registered: every subject is a device, every
     * configuration "basic", valid by BasicDeviceConfig.isValid and
     * naming a management address, a driver and a pipeconf.
     */
    private static void netcfg(ObjectMapper mapper, JsonNode body) {
        if (!body.isObject()) {
            throw new IllegalArgumentException("network configuration must be an object");
        }
        for (Map.Entry<String, JsonNode> cls : iterable(body)) {
            if (!cls.getKey().equals("devices") || !cls.getValue().isObject()) {
                throw new IllegalArgumentException("subject class " + cls.getKey() + " is not devices");
            }
            for (Map.Entry<String, JsonNode> subject : iterable(cls.getValue())) {
                DeviceId id = DeviceId.deviceId(subject.getKey());
                for (Map.Entry<String, JsonNode> config : iterable(subject.getValue())) {
                    if (!config.getKey().equals("basic")) {
                        throw new IllegalArgumentException("configuration " + config.getKey() + " of " + id + " is not basic");
                    }
                    BasicDeviceConfig basic = new BasicDeviceConfig();
                    basic.init(id, "basic", config.getValue(), mapper, cfg -> { });
                    if (!basic.isValid()) {
                        throw new IllegalArgumentException("basic configuration of " + id + " is not valid");
                    }
                    if (basic.managementAddress() == null || basic.driver() == null || basic.pipeconf() == null) {
                        throw new IllegalArgumentException("basic configuration of " + id
                                + " lacks a managementAddress, driver or pipeconf");
                    }
                }
            }
        }
    }

    private static JsonNode required(JsonNode node, String field) {
        JsonNode v = node.get(field);
        if (v == null) {
            throw new IllegalArgumentException(field + " required");
        }
        return v;
    }

    private static List<Map.Entry<String, JsonNode>> iterable(JsonNode node) {
        List<Map.Entry<String, JsonNode>> fields = new ArrayList<>();
        node.fields().forEachRemaining(fields::add);
        return fields;
    }
}
