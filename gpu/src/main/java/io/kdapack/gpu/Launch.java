package io.kdapack.gpu;

/**
 * Grid, block and dynamic shared memory of one kernel launch.
 *
 * @param gridX      blocks along x (≥ 1)
 * @param gridY      blocks along y
 * @param gridZ      blocks along z
 * @param block      threads per block (x only)
 * @param sharedBytes dynamic shared memory per block
 */
public record Launch(int gridX, int gridY, int gridZ, int block, int sharedBytes) {

    public Launch {
        if (gridX < 1 || gridY < 1 || gridZ < 1 || block < 1 || sharedBytes < 0) {
            throw new IllegalArgumentException("invalid launch " + gridX + "x" + gridY + "x" + gridZ + " block " + block
                    + " smem " + sharedBytes);
        }
    }

    public static Launch of(int gridX, int gridY, int gridZ, int block) {
        return new Launch(gridX, gridY, gridZ, block, 0);
    }
}
