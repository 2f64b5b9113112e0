package io.kdapack.api.http;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.InvalidPathException;
import java.nio.file.LinkOption;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;

/**
 * Confines dataset paths named in requests to one directory. A path is resolved against the root, then its
 * real location (symbolic links followed, for the longest existing prefix) must stay inside the root's real
 * location: {@code ..} and symlink escapes are refused with a 400 that names the field. A dataset prefix
 * ({@link #dataset}) is checked further by the real path of each file a job opens, its {@code .idx} and
 * {@code .bin}, so that a symbolic link planted as a file ({@code leak.idx -> /etc/passwd}) is refused before
 * any byte of its target is read; the errors name the request's path, never a link's target.
 *
 * <p>The check holds for the files as they are when the request is served: someone who can write into the data
 * root can still swap a checked file for a link before the job opens it (the data root is the operator's).
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

    /**
     * The real prefix of the Megatron dataset {@code requested} ({@code PREFIX.idx} and {@code PREFIX.bin}) inside
     * the root: {@link #resolve}, then both files must exist as regular files whose real paths (every symbolic link
     * followed) lie inside the root and form one prefix's pair. The job opens the returned prefix, so it reads the
     * files that were checked.
     *
     * @param field the request field the prefix came from, for the error
     */
    public Path dataset(String requested, String field) {
        Path prefix = resolve(requested, field);
        if (prefix.equals(root)) {
            throw ApiException.badRequest("dataset '" + requested + "' names the data root itself, not a prefix inside "
                    + "it", field);
        }
        Path realIdx = realFileInside(prefix, ".idx", requested, field);
        Path realBin = realFileInside(prefix, ".bin", requested, field);
        String idxName = realIdx.getFileName().toString();
        String stem = idxName.endsWith(".idx") ? idxName.substring(0, idxName.length() - ".idx".length()) : null;
        if (stem == null || stem.isEmpty() || !realBin.equals(realIdx.resolveSibling(stem + ".bin"))) {
            throw ApiException.badRequest("dataset '" + requested + "': its .idx and .bin files (through symbolic "
                    + "links) are not one prefix's pair PREFIX.idx, PREFIX.bin", field);
        }
        return realIdx.resolveSibling(stem);
    }

    /** The real path of {@code prefix + extension}, refused unless it is a regular file inside the root. */
    private Path realFileInside(Path prefix, String extension, String requested, String field) {
        Path file = prefix.resolveSibling(prefix.getFileName() + extension);
        Path real;
        try {
            real = file.toRealPath();
        } catch (NoSuchFileException e) {
            throw ApiException.badRequest("dataset '" + requested + "': " + requested + extension + " not found in the "
                    + "data root (or a symbolic link to nowhere)", field);
        } catch (IOException e) {
            throw ApiException.badRequest("dataset '" + requested + "': " + requested + extension + " cannot be "
                    + "resolved (" + e.getClass().getSimpleName() + ")", field);
        }
        if (!real.startsWith(root)) {
            // Not naming the target: where the link leads is the server's business, not the client's.
            throw ApiException.badRequest("dataset '" + requested + "': " + requested + extension + " resolves outside "
                    + "the data root (a symbolic link)", field);
        }
        if (!Files.isRegularFile(real)) {
            throw ApiException.badRequest("dataset '" + requested + "': " + requested + extension + " is not a regular "
                    + "file", field);
        }
        return real;
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
