#include "model/rope.h"

#include <math.h>

void rope_inv_freq(const struct rope_config *r, int head_dim, float *inv_freq)
{
    for (int i = 0; i < head_dim / 2; i++) {
        double f = 1.0 / pow(r->theta, (double)(2 * i) / head_dim);
        if (r->type == ROPE_TYPE_LINEAR) {
            f /= r->factor;
        } else if (r->type == ROPE_TYPE_FACTORS) {
            f /= r->freq_factors[i];
        } else if (r->type == ROPE_TYPE_LLAMA3) {
            /* Llama 3.1: long wavelengths slow down by factor, short ones stay,
             * and the band between is interpolated smoothly. */
            double low_wavelen = r->original_max_positions / r->low_freq_factor;
            double high_wavelen = r->original_max_positions / r->high_freq_factor;
            double wavelen = 2 * M_PI / f;
            if (wavelen > low_wavelen) {
                f /= r->factor;
            } else if (wavelen >= high_wavelen) {
                double smooth = (r->original_max_positions / wavelen - r->low_freq_factor) /
                                (r->high_freq_factor - r->low_freq_factor);
                f = (1 - smooth) * f / r->factor + smooth * f;
            }
        }
        inv_freq[i] = (float)f;
    }
}
