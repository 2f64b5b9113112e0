package io.kdapack.api.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class ServerConfigFileTest {

    @TempDir
    Path temp;

    private ServerSettings read(String yaml) throws Exception {
        Path file = Files.writeString(temp.resolve("kdapack.yaml"), yaml);
        return ServerConfigFile.read(file, ServerSettings.defaults());
    }

    private String refusal(String yaml) {
        return assertThrows(IllegalArgumentException.class, () -> read(yaml)).getMessage();
    }

    @Test
    void theServerSectionOverridesDefaultsAndOtherSectionsAreLeftAlone() throws Exception {
        ServerSettings settings = read("""
                train:
                  steps: 100
                server:
                  bind: 0.0.0.0
                  port: 9000
                  token_file: secrets/token
                  max_body_bytes: 65536
                  data_root: /data
                  retain_finished_jobs: 3
                """);
        assertEquals("0.0.0.0", settings.bind());
        assertEquals(9000, settings.port());
        assertEquals(Path.of("secrets/token"), settings.tokenFile());
        assertEquals(65536, settings.maxBodyBytes());
        assertEquals(Path.of("/data"), settings.dataRoot());
        assertEquals(3, settings.retainFinished());
        assertEquals(null, settings.token());
        assertSame(ServerSettings.defaults().pipeline(), settings.pipeline());
        assertEquals(ServerSettings.defaults(), read("train: {steps: 1}\n"));
    }

    @Test
    void badKeysAndValuesAreNamed() {
        assertTrue(refusal("server:\n  prot: 1\n").endsWith("server.prot: unknown field 'prot'"));
        assertTrue(refusal("server:\n  port: eighty\n").endsWith("server.port: wrong type: expected integer"));
        assertTrue(refusal("server:\n  port: 70000\n").contains("port must be in [0, 65535], got 70000"));
        assertTrue(refusal("server:\n  token: short\n").contains("at least 16 characters"));
        assertTrue(refusal("server: [1\n").contains("malformed YAML"));
    }
}
