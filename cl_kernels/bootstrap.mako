//CL//
## Bootstrap resampling within bands: for every row of every resampled copy of
## an object, the row it takes its value (and uncertainty) from, drawn with
## replacement among the object's rows of the same band.
##
## No render parameters. Integer arithmetic only, so every device gives the
## same draws.
##
## Random bits: Philox4x32-10 (Salmon, Moraes, Dror & Shaw 2011), a
## counter-based generator: the draw of row i (counted from its object's first
## row) of resampling r of catalog object k depends only on the counter
## (i, r, k mod 2^32, k / 2^32) and the key (the 64-bit seed), never on the
## work-item, the work-group size, the batch or the device. Words 0 and 1 of
## the output form u (64 bits); the row draws entry floor(u n / 2^64) of the n
## rows of its object and band (mul_hi, exact).
##
## ND-range: (rows of the batch, padded) x (resamplings of the batch); any
## work-group size.

#define PHILOX_M0 0xD2511F53u
#define PHILOX_M1 0xCD9E8D57u
#define PHILOX_W0 0x9E3779B9u
#define PHILOX_W1 0xBB67AE85u

inline uint4 philox_round(const uint4 x, const uint2 key)
{
    const uint hi0 = mul_hi(PHILOX_M0, x.s0);
    const uint hi1 = mul_hi(PHILOX_M1, x.s2);
    return (uint4)(hi1 ^ x.s1 ^ key.s0, PHILOX_M1 * x.s2, hi0 ^ x.s3 ^ key.s1, PHILOX_M0 * x.s0);
}

inline uint4 philox4x32_10(uint4 counter, uint2 key)
{
    counter = philox_round(counter, key);
    for (int r = 1; r < 10; ++r) {
        key += (uint2)(PHILOX_W0, PHILOX_W1);
        counter = philox_round(counter, key);
    }
    return counter;
}

// Rows of the batch are its objects' rows, object after object (`starts`,
// n_objects + 1 entries); `owner` gives each row's object, `object_index` each
// object's index in the catalog. `pool` lists the batch's rows sorted by
// object and band (catalog order within a band); row j's band pool is
// pool[pool_start[j] .. pool_start[j] + pool_size[j] - 1]. `drawn` receives,
// object by object, resampling by resampling (first_resampling + column),
// row by row, the batch row each copy's row takes its value from.
__kernel void bootstrap_draw(
    __global const int *restrict owner, __global const int *restrict starts,
    __global const long *restrict object_index, __global const int *restrict pool,
    __global const int *restrict pool_start, __global const int *restrict pool_size,
    const int n_rows, const int first_resampling, const uint seed_low, const uint seed_high,
    __global int *restrict drawn)
{
    const int row = get_global_id(0);
    if (row >= n_rows)
        return;
    const int column = get_global_id(1);
    const int object = owner[row];
    const int first = starts[object];
    const int length = starts[object + 1] - first;
    const ulong index = (ulong) object_index[object];
    const uint4 counter = (uint4)(
        (uint) (row - first), (uint) (first_resampling + column), (uint) index,
        (uint) (index >> 32));
    const uint4 bits = philox4x32_10(counter, (uint2)(seed_low, seed_high));
    const ulong u = upsample(bits.s1, bits.s0);
    const int pick = (int) mul_hi(u, (ulong) pool_size[row]);
    const long out = (long) first * get_global_size(1) + (long) column * length + (row - first);
    drawn[out] = pool[pool_start[row] + pick];
}
