/* Small deterministic random numbers for weight initialisation and tests:
 * splitmix64 to derive independent streams from (seed, a, b), xoshiro256**
 * for the stream itself, Box-Muller for normals. Not for sampling tokens
 * (the engine's sampler has its own counter-based generator). */
#ifndef INFER_CORE_RNG_H
#define INFER_CORE_RNG_H

#include <stdint.h>

struct rng {
    uint64_t s[4];
};

/* A stream determined only by (seed, stream_a, stream_b). */
void rng_seed(struct rng *r, uint64_t seed, uint64_t stream_a, uint64_t stream_b);
uint64_t rng_next(struct rng *r);
/* Uniform in [0, 1). */
double rng_uniform(struct rng *r);
/* Standard normal. */
double rng_normal(struct rng *r);

#endif
