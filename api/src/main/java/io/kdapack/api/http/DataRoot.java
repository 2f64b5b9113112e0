package io.kdapack.api.http;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.InvalidPathException;
import java.nio.file.LinkOption;
import java.nio.file.Path;

/**
 * Confines dataset paths named in requests to one directory. A path is resolved against the root, then its
 * real location (symbolic links followed, for the longest existing prefix) must stay inside the root's real
 * location: {@code ..} and symlink escapes are refused with a 400 that names the field.
 */
public final class DataRoot {

    private final Path root;

    /** @param root an existing directory */
    public DataRoot(Path root) throws IOException {
        if (!Files.isDirectory(root)) {
            throw new IllegalArgumentException("data root " + root + " is not a directory");
        }
        this.root = root.toRealPath();
    }

    public Path root() {
        return root;
    }

    /**
     * The absolute path of {@code requested} inside the root.
     *
     * @param field the request field the path came from, for the error
     */
    public Path resolve(String requested, String field) {
        if (requested == null || requested.isBlank()) {
            throw ApiException.badRequest("a path is required", field);
        }
        Path candidate;
        try {
            candidate = root.resolve(requested).normalize();
        } catch (InvalidPathException e) {
            throw ApiException.badRequest("invalid path '" + requested + "': " + e.getReason(), field);
        }
        if (!candidate.startsWith(root) || !realPrefix(candidate, requested, field).startsWith(root)) {
            throw ApiException.badRequest("path '" + requested + "' leaves the data root", field);
        }
        return candidate;
    }

    /** The real path of the longest existing prefix of {@code path}, with the rest appended. */
    private static Path realPrefix(Path path, String requested, String field) {
        Path existing = path;
        while (existing != null && !Files.exists(existing, LinkOption.NOFOLLOW_LINKS)) {
            existing = existing.getParent();
        }
        if (existing == null) {
            return path;
        }
        try {
            return existing.toRealPath().resolve(existing.relativize(path)).normalize();
        } catch (IOException e) {
            // A dangling link or an unreadable directory: refuse rather than guess where it leads.
            throw ApiException.badRequest("path '" + requested + "' cannot be resolved: " + e.getMessage(), field);
        }
    }
}
