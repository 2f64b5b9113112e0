package io.kdapack.api.server;

import com.fasterxml.jackson.annotation.JsonProperty;
import com.fasterxml.jackson.databind.JsonNode;
import io.kdapack.api.http.ApiException;
import io.kdapack.api.http.Json;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * Reads the {@code server:} section of a kdapack configuration file (YAML or JSON) over the defaults; the
 * file's other sections belong to the training job and are ignored here. Keys: {@code bind, port, token,
 * token_file, max_body_bytes, data_root, retain_finished_jobs}. An unknown key or a wrong type fails with
 * the key named. To be replaced by the {@code server} record of {@code io.kdapack.config} once that module
 * lands on main.
 */
public final class ServerConfigFile {

    private ServerConfigFile() {
    }

    private record ServerSection(String bind, Integer port, String token, @JsonProperty("token_file") String tokenFile,
                                 @JsonProperty("max_body_bytes") Integer maxBodyBytes,
                                 @JsonProperty("data_root") String dataRoot,
                                 @JsonProperty("retain_finished_jobs") Integer retainFinishedJobs) {
    }

    public static ServerSettings read(Path file, ServerSettings defaults) throws IOException {
        byte[] bytes = Files.readAllBytes(file);
        boolean json = file.getFileName().toString().endsWith(".json");
        ServerSection section;
        try {
            JsonNode server = Json.readObject(bytes, !json).get("server");
            if (server == null || server.isNull()) {
                return defaults;
            }
            section = Json.read(Json.write(server), ServerSection.class);
        } catch (ApiException e) {
            String key = e.field() == null ? "server" : "server." + e.field();
            throw new IllegalArgumentException(file + ": " + key + ": " + e.getMessage());
        }
        try {
            return new ServerSettings(
                    section.bind() != null ? section.bind() : defaults.bind(),
                    section.port() != null ? section.port() : defaults.port(),
                    section.token() != null ? section.token() : defaults.token(),
                    section.tokenFile() != null ? Path.of(section.tokenFile()) : defaults.tokenFile(),
                    section.maxBodyBytes() != null ? section.maxBodyBytes() : defaults.maxBodyBytes(),
                    section.dataRoot() != null ? Path.of(section.dataRoot()) : defaults.dataRoot(),
                    defaults.askTimeout(),
                    section.retainFinishedJobs() != null ? section.retainFinishedJobs() : defaults.retainFinished(),
                    defaults.pipeline());
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException(file + ": server: " + e.getMessage());
        }
    }
}
