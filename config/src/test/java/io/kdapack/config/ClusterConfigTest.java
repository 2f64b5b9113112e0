package io.kdapack.config;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The {@code cluster} section: its defaults (off), its lists, and errors that name the key. */
class ClusterConfigTest {

    @TempDir
    Path temp;

    @Test
    void offByDefaultWithBothRolesAndKeepMajority() {
        ClusterConfig c = ConfigLoader.fromYaml("").cluster();
        assertFalse(c.enabled());
        assertEquals(List.of("api", "worker"), c.roles());
        assertEquals(List.of(), c.seedNodes());
        assertEquals(ClusterConfig.SplitBrainStrategy.KEEP_MAJORITY, c.splitBrainResolver());
        assertEquals("keep-majority", c.splitBrainResolver().pekkoName());
    }

    @Test
    void aFileSetsTheListsAndEnvironmentTextOverridesThem() throws Exception {
        Path file = Files.writeString(temp.resolve("node.yaml"), """
                cluster:
                  enabled: true
                  port: 2553
                  seed_nodes: ["127.0.0.1:2552", "10.0.0.2:2552"]
                  roles: [worker]
                  split_brain_resolver: keep_oldest
                  failure_timeout_ms: 5000
                """);
        ClusterConfig c = ConfigLoader.load(file, Map.of(), new Properties()).cluster();
        assertTrue(c.enabled());
        assertEquals(2553, c.port());
        assertEquals(List.of("127.0.0.1:2552", "10.0.0.2:2552"), c.seedNodes());
        assertEquals(List.of("worker"), c.roles());
        assertEquals(ClusterConfig.SplitBrainStrategy.KEEP_OLDEST, c.splitBrainResolver());
        assertEquals(5000, c.failureTimeoutMs());

        c = ConfigLoader.load(file, Map.of("KDAPACK_CLUSTER_SEED_NODES", "a:1, b:2", "KDAPACK_CLUSTER_ROLES", "api,worker"),
                new Properties()).cluster();
        assertEquals(List.of("a:1", "b:2"), c.seedNodes());
        assertEquals(List.of("api", "worker"), c.roles());
    }

    @Test
    void badValuesNameTheKey() {
        assertKey("cluster.roles", "cluster:\n  roles: [api, trainer]\n", "expected [api], [worker] or [api, worker]");
        assertKey("cluster.roles", "cluster:\n  roles: []\n", "expected [api], [worker] or [api, worker]");
        assertKey("cluster.seed_nodes[1]", "cluster:\n  seed_nodes: [\"a:2552\", \"b\"]\n", "host:port");
        assertKey("cluster.seed_nodes[0]", "cluster:\n  seed_nodes: [\"a:70000\"]\n", "host:port");
        assertKey("cluster.seed_nodes", "cluster:\n  seed_nodes: \"a:2552\"\n", "a list of strings");
        assertKey("cluster.port", "cluster:\n  port: 65536\n", "[0, 65535]");
        assertKey("cluster.split_brain_resolver", "cluster:\n  split_brain_resolver: lease_majority\n", "keep_majority");
        assertKey("cluster.stable_after_ms", "cluster:\n  stable_after_ms: 0\n", "[100, 3600000]");
        assertKey("cluster.bogus", "cluster:\n  bogus: 1\n", "unknown key");
    }

    private static void assertKey(String key, String yaml, String allowed) {
        ConfigException e = assertThrows(ConfigException.class, () -> ConfigLoader.fromYaml(yaml), yaml);
        assertEquals(key, e.key(), e.getMessage());
        assertTrue(e.getMessage().contains(allowed), e.getMessage());
    }
}
