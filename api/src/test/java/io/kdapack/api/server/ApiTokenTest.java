package io.kdapack.api.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kdapack.config.ServerConfig;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class ApiTokenTest {

    @TempDir
    Path temp;

    @Test
    void aGeneratedTokenIsWrittenReadableByItsOwnerOnly() throws Exception {
        Path file = temp.resolve("run/server.token");
        ServerSettings settings = ServerSettings.from(ServerConfig.defaults()).withToken(null, file);
        String token = ApiToken.resolve(settings);
        assertEquals(43, token.length(), "256 bits in unpadded base64url");
        assertEquals(token + "\n", Files.readString(file));
        assertEquals("rw-------", PosixFilePermissions.toString(Files.getPosixFilePermissions(file)));
        assertNotEquals(token, ApiToken.resolve(settings), "a fresh token at each start");
        try (var files = Files.list(file.getParent())) {
            assertEquals(1, files.count(), "no temporary file left behind");
        }
    }

    @Test
    void aConfiguredTokenIsUsedAndNothingIsWritten() throws Exception {
        Path file = temp.resolve("server.token");
        String configured = "configured-token-0123456789";
        assertEquals(configured, ApiToken.resolve(ServerSettings.from(ServerConfig.defaults()).withToken(configured, file)));
        assertFalse(Files.exists(file));
        var tooShort = assertThrows(IllegalArgumentException.class,
                () -> ServerSettings.from(ServerConfig.defaults()).withToken("short", file));
        assertTrue(tooShort.getMessage().contains("at least 16 characters"));
    }
}
