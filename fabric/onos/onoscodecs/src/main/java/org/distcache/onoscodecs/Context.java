package org.distcache.onoscodecs;

import com.fasterxml.jackson.databind.ObjectMapper;
import org.onosproject.codec.CodecContext;
import org.onosproject.codec.JsonCodec;
import org.onosproject.codec.impl.CodecManager;
import org.onosproject.core.CoreService;

/** The codec context ONOS's REST resources give the codecs, with the one service they use. */
final class Context implements CodecContext {
    private final CodecManager codecs;
    private final ObjectMapper mapper;
    private final CoreService core;

    Context(CodecManager codecs, ObjectMapper mapper, CoreService core) {
        this.codecs = codecs;
        this.mapper = mapper;
        this.core = core;
    }

    @Override
    public ObjectMapper mapper() {
        return mapper;
    }

    @Override
    public <T> JsonCodec<T> codec(Class<T> entityClass) {
        JsonCodec<T> codec = codecs.getCodec(entityClass);
        if (codec == null) {
            throw new IllegalStateException("ONOS has no codec for " + entityClass.getName());
        }
        return codec;
    }

    @Override
    public <T> T getService(Class<T> serviceClass) {
        if (serviceClass == CoreService.class) {
            return serviceClass.cast(core);
        }
        throw new IllegalStateException("the harness has no " + serviceClass.getName());
    }
}
