package io.kdapack.api.server;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.attribute.PosixFilePermissions;
import java.security.SecureRandom;
import java.util.Base64;

/** The server's bearer token: the configured one, or a fresh random one written to an owner-only file. */
public final class ApiToken {

    private ApiToken() {
    }

    /** Returns the configured token, or generates one (256 random bits) and writes it to {@code tokenFile}. */
    public static String resolve(ServerSettings settings) throws IOException {
        if (settings.token() != null) {
            return settings.token();
        }
        byte[] random = new byte[32];
        new SecureRandom().nextBytes(random);
        String token = Base64.getUrlEncoder().withoutPadding().encodeToString(random);
        writeOwnerOnly(settings.tokenFile(), token + "\n");
        return token;
    }

    /** Writes atomically; the file is created readable and writable by its owner only, never wider. */
    static void writeOwnerOnly(Path file, String content) throws IOException {
        Path dir = file.toAbsolutePath().getParent();
        Files.createDirectories(dir);
        Path temp = Files.createTempFile(dir, file.getFileName().toString(), ".tmp",
                PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rw-------")));
        try {
            Files.writeString(temp, content, StandardCharsets.UTF_8);
            Files.move(temp, file, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
        } finally {
            Files.deleteIfExists(temp);
        }
    }
}
