/* precision.h: the engine's number formats (eng_dtype) and the precision
 * plugins behind them. The engine's kernels read four storage layouts
 * (float32, float16, bfloat16, int8 with a scale per row); a case's precision plugin is accepted when
 * its conversions produce one of them (int8 elements whose dtype is named
 * "w8a8": ENG_W8A8, the same int8 rows packed for the integer kernels), and every weight conversion (at load,
 * synthetic or from a checkpoint) goes through that format's
 * bc_precision_ops, the same tables the precision plugins hand the host
 * (plugins/precision/common/formats.c).
 */
#ifndef ENG_PRECISION_H
#define ENG_PRECISION_H

#include <stddef.h>
#include <stdint.h>

#include "benchctl/plugin.h"
#include "kernels.h"

/* The precision ops of dt (never NULL). */
const bc_precision_ops *eng_dtype_precision(eng_dtype dt);

/* The layout the precision plugin `name` with ops stores, as a dtype the
 * kernels read: checked by converting a set of probe values (ties,
 * subnormals, overflow, inf, NaN) both ways and comparing the bits with each
 * layout's. BC_ERR_UNSUPPORTED, naming the plugin, for any other layout. */
bc_status eng_precision_dtype(const char *name, const bc_precision_ops *ops, eng_dtype *dt, bc_error *err);

/* Converts n values src (dtype st) into dst (dtype dt) through the formats'
 * to_f32 / from_f32, in bulk. src and dst may be unaligned (a file's
 * bytes); they do not overlap. */
void eng_convert_values(void *dst, eng_dtype dt, const void *src, eng_dtype st, size_t n);

/* int8 rows (kernels.h, ENG_I8): the scale of a row whose largest magnitude
 * is absmax, absmax / 127 (0 for an all-zero row); the largest |src[i]| of
 * src[n] (NaN skipped); q[n] = src[n] / scale rounded by the int8 format's
 * rule (prec_f32_to_i8; all 0 when scale is 0); and the three in a row:
 * q[n] from a whole row src[n], its scale returned. All with the bulk
 * converters of the best tier the CPU runs (convert.h), bit for bit the
 * scalar rules. */
float eng_i8_row_scale(float absmax);
float eng_i8_row_absmax(const float *src, size_t n);
void eng_i8_quantize(int8_t *q, const float *src, size_t n, float scale);
float eng_i8_quantize_row(int8_t *q, const float *src, size_t n);

/* Converts the matrix src[rows, cols] (dtype st) into dst in dt: for ENG_I8
 * the block of kernels.h (eng_matrix_bytes), each row quantized with
 * eng_i8_row_scale and eng_i8_quantize; for the other dtypes eng_convert_values. src may be unaligned. */
void eng_convert_matrix(void *dst, eng_dtype dt, const void *src, eng_dtype st, size_t rows, size_t cols);

/* ENG_W8A8 blocks (kernels.h; the pack layout: kernels_vnni.h). The whole
 * matrix [N, K] is packed by eng_convert_matrix, or row by row: clear sets
 * every packed byte to 0 (the padding rows and quads), then pack_row stores
 * row r from src[K] with the int8 quantiser above (its scale, its values,
 * its correction 128 * sum_k q[r, k]); rows may be packed by different
 * threads. row_to_f32: dst[K] = scale[r] * q[r, :] (an embedding row). */
void eng_w8a8_clear(void *w, size_t N, size_t K);
void eng_w8a8_pack_row(void *w, size_t N, size_t K, size_t r, const float *src);
void eng_w8a8_row_to_f32(float *dst, const void *w, size_t N, size_t K, size_t r);

#endif
