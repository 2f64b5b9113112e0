package io.kdapack.actors.cluster;

import com.fasterxml.jackson.core.JsonGenerator;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.databind.DeserializationContext;
import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.JsonDeserializer;
import com.fasterxml.jackson.databind.JsonSerializer;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializerProvider;
import com.fasterxml.jackson.databind.module.SimpleModule;
import java.io.IOException;
import java.io.NotSerializableException;
import java.time.Instant;
import org.apache.pekko.actor.ExtendedActorSystem;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.ActorRefResolver;
import org.apache.pekko.actor.typed.javadsl.Adapter;
import org.apache.pekko.serialization.SerializerWithStringManifest;

/**
 * Serializes {@link ClusterMessage}s as JSON (Jackson over the records' components): the manifest is the record's class
 * name, and only classes that implement {@link ClusterMessage} are ever instantiated from the wire. Typed actor
 * references travel as their serialization format ({@link ActorRefResolver}), instants as ISO-8601 text. The messages
 * are small (a job status, one step event, a list of placements), so JSON's cost does not matter; gradients never
 * travel through here.
 */
public final class ClusterSerializer extends SerializerWithStringManifest {

    /** Pekko's serializer id; ids below 40 are Pekko's own. */
    static final int IDENTIFIER = 7_301;

    private final ObjectMapper json;

    public ClusterSerializer(ExtendedActorSystem system) {
        ActorRefResolver resolver = ActorRefResolver.get(Adapter.toTyped(system));
        SimpleModule module = new SimpleModule("kdapack-cluster");
        module.addSerializer(ActorRef.class, new JsonSerializer<>() {
            @Override
            public void serialize(ActorRef value, JsonGenerator out, SerializerProvider provider) throws IOException {
                out.writeString(resolver.toSerializationFormat(value));
            }
        });
        module.addDeserializer(ActorRef.class, new JsonDeserializer<>() {
            @Override
            public ActorRef<?> deserialize(JsonParser in, DeserializationContext context) throws IOException {
                return resolver.resolveActorRef(in.getValueAsString());
            }
        });
        module.addSerializer(Instant.class, new JsonSerializer<>() {
            @Override
            public void serialize(Instant value, JsonGenerator out, SerializerProvider provider) throws IOException {
                out.writeString(value.toString());
            }
        });
        module.addDeserializer(Instant.class, new JsonDeserializer<>() {
            @Override
            public Instant deserialize(JsonParser in, DeserializationContext context) throws IOException {
                return Instant.parse(in.getValueAsString());
            }
        });
        this.json = new ObjectMapper().registerModule(module)
                .configure(DeserializationFeature.FAIL_ON_UNKNOWN_PROPERTIES, false);
    }

    @Override
    public int identifier() {
        return IDENTIFIER;
    }

    @Override
    public String manifest(Object message) {
        return message.getClass().getName();
    }

    @Override
    public byte[] toBinary(Object message) {
        if (!(message instanceof ClusterMessage)) {
            throw new IllegalArgumentException("not a cluster message: " + message.getClass().getName());
        }
        try {
            return json.writeValueAsBytes(message);
        } catch (IOException e) {
            throw new IllegalArgumentException("cannot serialize " + message.getClass().getName() + ": " + e, e);
        }
    }

    @Override
    public Object fromBinary(byte[] bytes, String manifest) throws NotSerializableException {
        Class<?> type;
        try {
            type = Class.forName(manifest, false, ClusterSerializer.class.getClassLoader());
        } catch (ClassNotFoundException e) {
            throw new NotSerializableException("unknown cluster message " + manifest);
        }
        if (!ClusterMessage.class.isAssignableFrom(type)) {
            throw new NotSerializableException("not a cluster message: " + manifest);
        }
        try {
            return json.readValue(bytes, type);
        } catch (IOException e) {
            throw new NotSerializableException("cannot read " + manifest + ": " + e.getMessage());
        }
    }
}
