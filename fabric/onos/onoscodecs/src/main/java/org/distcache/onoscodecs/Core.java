package org.distcache.onoscodecs;

import java.util.HashMap;
import java.util.HashSet;
import java.util.Map;
import java.util.Set;

import org.onosproject.core.ApplicationId;
import org.onosproject.core.CoreService;
import org.onosproject.core.DefaultApplicationId;
import org.onosproject.core.IdGenerator;
import org.onosproject.core.Version;

/** An in-memory application registry: the part of ONOS's core service the flow rule codec uses. */
final class Core implements CoreService {
    private final Map<String, ApplicationId> byName = new HashMap<>();
    private final Map<Short, ApplicationId> byId = new HashMap<>();

    @Override
    public Version version() {
        return Version.version("2.7.0");
    }

    @Override
    public Set<ApplicationId> getAppIds() {
        return new HashSet<>(byName.values());
    }

    @Override
    public ApplicationId getAppId(Short id) {
        return byId.get(id);
    }

    @Override
    public ApplicationId getAppId(String name) {
        return byName.get(name);
    }

    @Override
    public ApplicationId registerApplication(String name) {
        return byName.computeIfAbsent(name, n -> {
            ApplicationId id = new DefaultApplicationId(byName.size() + 1, n);
            byId.put(id.id(), id);
            return id;
        });
    }

    @Override
    public ApplicationId registerApplication(String name, Runnable preDeactivate) {
        return registerApplication(name);
    }

    @Override
    public IdGenerator getIdGenerator(String topic) {
        throw new UnsupportedOperationException("the harness generates no ids");
    }
}
