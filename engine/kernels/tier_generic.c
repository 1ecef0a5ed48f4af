/* tier_generic.c — portable C kernels (no -march flags). Placeholder: inherits ref. */
#include "kernels/kernels.h"

void tb_kernels_fill_generic(tb_kernels_t *k) { (void)k; }
