/* C11 type-generic forms of the OpenSHMEM 1.5 API (shmem_put, shmem_atomic_fetch_add,
 * shmem_wait_until, shmem_broadcast, shmem_sum_reduce, ...). Included by shmem.h for C11 and later
 * (never for C++). Generated from the type tables; keep it in step with them.
 *
 * Dispatch is on the type of *dest (or *source / *ivar / *fetch), whose qualifiers the controlling
 * expression drops, so const and volatile objects select the same function. The forms that take
 * an optional leading context (or team) are told apart by their argument count. Only distinct C
 * types can appear in a _Generic list: the fixed-width names (int64_t, size_t, ...) resolve to
 * the function of the type they alias. */
#ifndef VSHMEM_SHMEM_GENERIC_H
#define VSHMEM_SHMEM_GENERIC_H

#include "vshmem/shmem_types.h"

#define VSHMEM_C11_CAT_(a, b) a##b
#define VSHMEM_C11_CAT(a, b) VSHMEM_C11_CAT_(a, b)
#define VSHMEM_C11_NARG_(_1, _2, _3, _4, _5, _6, _7, _8, _9, N, ...) N
#define VSHMEM_C11_NARG(...) VSHMEM_C11_NARG_(__VA_ARGS__, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0)
/* name(args...) -> name_<argument count>(args...) */
#define VSHMEM_C11_BY_NARG(name, ...) \
  VSHMEM_C11_CAT(name##_, VSHMEM_C11_NARG(__VA_ARGS__))(__VA_ARGS__)

#define VSHMEM_C11_RMA(value, PREFIX, SUFFIX)          \
  _Generic((value), float                              \
           : PREFIX##float##SUFFIX, double             \
           : PREFIX##double##SUFFIX, long double       \
           : PREFIX##longdouble##SUFFIX, char          \
           : PREFIX##char##SUFFIX, signed char         \
           : PREFIX##schar##SUFFIX, short              \
           : PREFIX##short##SUFFIX, int                \
           : PREFIX##int##SUFFIX, long                 \
           : PREFIX##long##SUFFIX, long long           \
           : PREFIX##longlong##SUFFIX, unsigned char   \
           : PREFIX##uchar##SUFFIX, unsigned short     \
           : PREFIX##ushort##SUFFIX, unsigned int      \
           : PREFIX##uint##SUFFIX, unsigned long       \
           : PREFIX##ulong##SUFFIX, unsigned long long \
           : PREFIX##ulonglong##SUFFIX)

#define VSHMEM_C11_AMO_STD(value, PREFIX, SUFFIX)      \
  _Generic((value), int                                \
           : PREFIX##int##SUFFIX, long                 \
           : PREFIX##long##SUFFIX, long long           \
           : PREFIX##longlong##SUFFIX, unsigned int    \
           : PREFIX##uint##SUFFIX, unsigned long       \
           : PREFIX##ulong##SUFFIX, unsigned long long \
           : PREFIX##ulonglong##SUFFIX)

#define VSHMEM_C11_AMO_EXT(value, PREFIX, SUFFIX)      \
  _Generic((value), float                              \
           : PREFIX##float##SUFFIX, double             \
           : PREFIX##double##SUFFIX, int               \
           : PREFIX##int##SUFFIX, long                 \
           : PREFIX##long##SUFFIX, long long           \
           : PREFIX##longlong##SUFFIX, unsigned int    \
           : PREFIX##uint##SUFFIX, unsigned long       \
           : PREFIX##ulong##SUFFIX, unsigned long long \
           : PREFIX##ulonglong##SUFFIX)

#define VSHMEM_C11_AMO_BIT(value, PREFIX, SUFFIX)      \
  _Generic((value), unsigned int                       \
           : PREFIX##uint##SUFFIX, unsigned long       \
           : PREFIX##ulong##SUFFIX, unsigned long long \
           : PREFIX##ulonglong##SUFFIX, int32_t        \
           : PREFIX##int32##SUFFIX, int64_t            \
           : PREFIX##int64##SUFFIX)

#define VSHMEM_C11_P2P(value, PREFIX, SUFFIX)          \
  _Generic((value), short                              \
           : PREFIX##short##SUFFIX, int                \
           : PREFIX##int##SUFFIX, long                 \
           : PREFIX##long##SUFFIX, long long           \
           : PREFIX##longlong##SUFFIX, unsigned short  \
           : PREFIX##ushort##SUFFIX, unsigned int      \
           : PREFIX##uint##SUFFIX, unsigned long       \
           : PREFIX##ulong##SUFFIX, unsigned long long \
           : PREFIX##ulonglong##SUFFIX)

#define VSHMEM_C11_OLD(value, PREFIX, SUFFIX) \
  _Generic((value), int                       \
           : PREFIX##int##SUFFIX, long        \
           : PREFIX##long##SUFFIX, long long  \
           : PREFIX##longlong##SUFFIX)

#define VSHMEM_C11_OLD_EXT(value, PREFIX, SUFFIX) \
  _Generic((value), float                         \
           : PREFIX##float##SUFFIX, double        \
           : PREFIX##double##SUFFIX, int          \
           : PREFIX##int##SUFFIX, long            \
           : PREFIX##long##SUFFIX, long long      \
           : PREFIX##longlong##SUFFIX)

#define VSHMEM_C11_OLD_WAIT(value, PREFIX, SUFFIX) \
  _Generic((value), short                          \
           : PREFIX##short##SUFFIX, int            \
           : PREFIX##int##SUFFIX, long             \
           : PREFIX##long##SUFFIX, long long       \
           : PREFIX##longlong##SUFFIX)

#define VSHMEM_C11_RED_BIT(value, PREFIX, SUFFIX)      \
  _Generic((value), unsigned char                      \
           : PREFIX##uchar##SUFFIX, unsigned short     \
           : PREFIX##ushort##SUFFIX, unsigned int      \
           : PREFIX##uint##SUFFIX, unsigned long       \
           : PREFIX##ulong##SUFFIX, unsigned long long \
           : PREFIX##ulonglong##SUFFIX, int8_t         \
           : PREFIX##int8##SUFFIX, int16_t             \
           : PREFIX##int16##SUFFIX, int32_t            \
           : PREFIX##int32##SUFFIX, int64_t            \
           : PREFIX##int64##SUFFIX)

#define VSHMEM_C11_RED_MINMAX(value, PREFIX, SUFFIX)   \
  _Generic((value), char                               \
           : PREFIX##char##SUFFIX, signed char         \
           : PREFIX##schar##SUFFIX, short              \
           : PREFIX##short##SUFFIX, int                \
           : PREFIX##int##SUFFIX, long                 \
           : PREFIX##long##SUFFIX, long long           \
           : PREFIX##longlong##SUFFIX, unsigned char   \
           : PREFIX##uchar##SUFFIX, unsigned short     \
           : PREFIX##ushort##SUFFIX, unsigned int      \
           : PREFIX##uint##SUFFIX, unsigned long       \
           : PREFIX##ulong##SUFFIX, unsigned long long \
           : PREFIX##ulonglong##SUFFIX, float          \
           : PREFIX##float##SUFFIX, double             \
           : PREFIX##double##SUFFIX, long double       \
           : PREFIX##longdouble##SUFFIX)

#define VSHMEM_C11_RED_ARITH(value, PREFIX, SUFFIX)      \
  _Generic((value), char                                 \
           : PREFIX##char##SUFFIX, signed char           \
           : PREFIX##schar##SUFFIX, short                \
           : PREFIX##short##SUFFIX, int                  \
           : PREFIX##int##SUFFIX, long                   \
           : PREFIX##long##SUFFIX, long long             \
           : PREFIX##longlong##SUFFIX, unsigned char     \
           : PREFIX##uchar##SUFFIX, unsigned short       \
           : PREFIX##ushort##SUFFIX, unsigned int        \
           : PREFIX##uint##SUFFIX, unsigned long         \
           : PREFIX##ulong##SUFFIX, unsigned long long   \
           : PREFIX##ulonglong##SUFFIX, float            \
           : PREFIX##float##SUFFIX, double               \
           : PREFIX##double##SUFFIX, long double         \
           : PREFIX##longdouble##SUFFIX, double _Complex \
           : PREFIX##complexd##SUFFIX, float _Complex    \
           : PREFIX##complexf##SUFFIX)

/* RMA */
#define shmem_put(...) VSHMEM_C11_BY_NARG(vshmem_c11_put, __VA_ARGS__)
#define vshmem_c11_put_4(a0, a1, a2, a3) VSHMEM_C11_RMA(*(a0), shmem_, _put)(a0, a1, a2, a3)
#define vshmem_c11_put_5(ctx, a0, a1, a2, a3) \
  VSHMEM_C11_RMA(*(a0), shmem_ctx_, _put)(ctx, a0, a1, a2, a3)

#define shmem_get(...) VSHMEM_C11_BY_NARG(vshmem_c11_get, __VA_ARGS__)
#define vshmem_c11_get_4(a0, a1, a2, a3) VSHMEM_C11_RMA(*(a0), shmem_, _get)(a0, a1, a2, a3)
#define vshmem_c11_get_5(ctx, a0, a1, a2, a3) \
  VSHMEM_C11_RMA(*(a0), shmem_ctx_, _get)(ctx, a0, a1, a2, a3)

#define shmem_put_nbi(...) VSHMEM_C11_BY_NARG(vshmem_c11_put_nbi, __VA_ARGS__)
#define vshmem_c11_put_nbi_4(a0, a1, a2, a3) VSHMEM_C11_RMA(*(a0), shmem_, _put_nbi)(a0, a1, a2, a3)
#define vshmem_c11_put_nbi_5(ctx, a0, a1, a2, a3) \
  VSHMEM_C11_RMA(*(a0), shmem_ctx_, _put_nbi)(ctx, a0, a1, a2, a3)

#define shmem_get_nbi(...) VSHMEM_C11_BY_NARG(vshmem_c11_get_nbi, __VA_ARGS__)
#define vshmem_c11_get_nbi_4(a0, a1, a2, a3) VSHMEM_C11_RMA(*(a0), shmem_, _get_nbi)(a0, a1, a2, a3)
#define vshmem_c11_get_nbi_5(ctx, a0, a1, a2, a3) \
  VSHMEM_C11_RMA(*(a0), shmem_ctx_, _get_nbi)(ctx, a0, a1, a2, a3)

#define shmem_p(...) VSHMEM_C11_BY_NARG(vshmem_c11_p, __VA_ARGS__)
#define vshmem_c11_p_3(a0, a1, a2) VSHMEM_C11_RMA(*(a0), shmem_, _p)(a0, a1, a2)
#define vshmem_c11_p_4(ctx, a0, a1, a2) VSHMEM_C11_RMA(*(a0), shmem_ctx_, _p)(ctx, a0, a1, a2)

#define shmem_g(...) VSHMEM_C11_BY_NARG(vshmem_c11_g, __VA_ARGS__)
#define vshmem_c11_g_2(a0, a1) VSHMEM_C11_RMA(*(a0), shmem_, _g)(a0, a1)
#define vshmem_c11_g_3(ctx, a0, a1) VSHMEM_C11_RMA(*(a0), shmem_ctx_, _g)(ctx, a0, a1)

#define shmem_iput(...) VSHMEM_C11_BY_NARG(vshmem_c11_iput, __VA_ARGS__)
#define vshmem_c11_iput_6(a0, a1, a2, a3, a4, a5) \
  VSHMEM_C11_RMA(*(a0), shmem_, _iput)(a0, a1, a2, a3, a4, a5)
#define vshmem_c11_iput_7(ctx, a0, a1, a2, a3, a4, a5) \
  VSHMEM_C11_RMA(*(a0), shmem_ctx_, _iput)(ctx, a0, a1, a2, a3, a4, a5)

#define shmem_iget(...) VSHMEM_C11_BY_NARG(vshmem_c11_iget, __VA_ARGS__)
#define vshmem_c11_iget_6(a0, a1, a2, a3, a4, a5) \
  VSHMEM_C11_RMA(*(a0), shmem_, _iget)(a0, a1, a2, a3, a4, a5)
#define vshmem_c11_iget_7(ctx, a0, a1, a2, a3, a4, a5) \
  VSHMEM_C11_RMA(*(a0), shmem_ctx_, _iget)(ctx, a0, a1, a2, a3, a4, a5)

#define shmem_ibput(...) VSHMEM_C11_BY_NARG(vshmem_c11_ibput, __VA_ARGS__)
#define vshmem_c11_ibput_7(a0, a1, a2, a3, a4, a5, a6) \
  VSHMEM_C11_RMA(*(a0), shmem_, _ibput)(a0, a1, a2, a3, a4, a5, a6)
#define vshmem_c11_ibput_8(ctx, a0, a1, a2, a3, a4, a5, a6) \
  VSHMEM_C11_RMA(*(a0), shmem_ctx_, _ibput)(ctx, a0, a1, a2, a3, a4, a5, a6)

#define shmem_ibget(...) VSHMEM_C11_BY_NARG(vshmem_c11_ibget, __VA_ARGS__)
#define vshmem_c11_ibget_7(a0, a1, a2, a3, a4, a5, a6) \
  VSHMEM_C11_RMA(*(a0), shmem_, _ibget)(a0, a1, a2, a3, a4, a5, a6)
#define vshmem_c11_ibget_8(ctx, a0, a1, a2, a3, a4, a5, a6) \
  VSHMEM_C11_RMA(*(a0), shmem_ctx_, _ibget)(ctx, a0, a1, a2, a3, a4, a5, a6)

/* Signals */
#define shmem_put_signal(...) VSHMEM_C11_BY_NARG(vshmem_c11_put_signal, __VA_ARGS__)
#define vshmem_c11_put_signal_7(a0, a1, a2, a3, a4, a5, a6) \
  VSHMEM_C11_RMA(*(a0), shmem_, _put_signal)(a0, a1, a2, a3, a4, a5, a6)
#define vshmem_c11_put_signal_8(ctx, a0, a1, a2, a3, a4, a5, a6) \
  VSHMEM_C11_RMA(*(a0), shmem_ctx_, _put_signal)(ctx, a0, a1, a2, a3, a4, a5, a6)

#define shmem_put_signal_nbi(...) VSHMEM_C11_BY_NARG(vshmem_c11_put_signal_nbi, __VA_ARGS__)
#define vshmem_c11_put_signal_nbi_7(a0, a1, a2, a3, a4, a5, a6) \
  VSHMEM_C11_RMA(*(a0), shmem_, _put_signal_nbi)(a0, a1, a2, a3, a4, a5, a6)
#define vshmem_c11_put_signal_nbi_8(ctx, a0, a1, a2, a3, a4, a5, a6) \
  VSHMEM_C11_RMA(*(a0), shmem_ctx_, _put_signal_nbi)(ctx, a0, a1, a2, a3, a4, a5, a6)

/* Atomics */
#define shmem_atomic_fetch(...) VSHMEM_C11_BY_NARG(vshmem_c11_atomic_fetch, __VA_ARGS__)
#define vshmem_c11_atomic_fetch_2(a0, a1) VSHMEM_C11_AMO_EXT(*(a0), shmem_, _atomic_fetch)(a0, a1)
#define vshmem_c11_atomic_fetch_3(ctx, a0, a1) \
  VSHMEM_C11_AMO_EXT(*(a0), shmem_ctx_, _atomic_fetch)(ctx, a0, a1)

#define shmem_atomic_set(...) VSHMEM_C11_BY_NARG(vshmem_c11_atomic_set, __VA_ARGS__)
#define vshmem_c11_atomic_set_3(a0, a1, a2) \
  VSHMEM_C11_AMO_EXT(*(a0), shmem_, _atomic_set)(a0, a1, a2)
#define vshmem_c11_atomic_set_4(ctx, a0, a1, a2) \
  VSHMEM_C11_AMO_EXT(*(a0), shmem_ctx_, _atomic_set)(ctx, a0, a1, a2)

#define shmem_atomic_swap(...) VSHMEM_C11_BY_NARG(vshmem_c11_atomic_swap, __VA_ARGS__)
#define vshmem_c11_atomic_swap_3(a0, a1, a2) \
  VSHMEM_C11_AMO_EXT(*(a0), shmem_, _atomic_swap)(a0, a1, a2)
#define vshmem_c11_atomic_swap_4(ctx, a0, a1, a2) \
  VSHMEM_C11_AMO_EXT(*(a0), shmem_ctx_, _atomic_swap)(ctx, a0, a1, a2)

#define shmem_atomic_fetch_nbi(...) VSHMEM_C11_BY_NARG(vshmem_c11_atomic_fetch_nbi, __VA_ARGS__)
#define vshmem_c11_atomic_fetch_nbi_3(a0, a1, a2) \
  VSHMEM_C11_AMO_EXT(*(a0), shmem_, _atomic_fetch_nbi)(a0, a1, a2)
#define vshmem_c11_atomic_fetch_nbi_4(ctx, a0, a1, a2) \
  VSHMEM_C11_AMO_EXT(*(a0), shmem_ctx_, _atomic_fetch_nbi)(ctx, a0, a1, a2)

#define shmem_atomic_swap_nbi(...) VSHMEM_C11_BY_NARG(vshmem_c11_atomic_swap_nbi, __VA_ARGS__)
#define vshmem_c11_atomic_swap_nbi_4(a0, a1, a2, a3) \
  VSHMEM_C11_AMO_EXT(*(a0), shmem_, _atomic_swap_nbi)(a0, a1, a2, a3)
#define vshmem_c11_atomic_swap_nbi_5(ctx, a0, a1, a2, a3) \
  VSHMEM_C11_AMO_EXT(*(a0), shmem_ctx_, _atomic_swap_nbi)(ctx, a0, a1, a2, a3)

#define shmem_atomic_compare_swap(...) \
  VSHMEM_C11_BY_NARG(vshmem_c11_atomic_compare_swap, __VA_ARGS__)
#define vshmem_c11_atomic_compare_swap_4(a0, a1, a2, a3) \
  VSHMEM_C11_AMO_STD(*(a0), shmem_, _atomic_compare_swap)(a0, a1, a2, a3)
#define vshmem_c11_atomic_compare_swap_5(ctx, a0, a1, a2, a3) \
  VSHMEM_C11_AMO_STD(*(a0), shmem_ctx_, _atomic_compare_swap)(ctx, a0, a1, a2, a3)

#define shmem_atomic_fetch_inc(...) VSHMEM_C11_BY_NARG(vshmem_c11_atomic_fetch_inc, __VA_ARGS__)
#define vshmem_c11_atomic_fetch_inc_2(a0, a1) \
  VSHMEM_C11_AMO_STD(*(a0), shmem_, _atomic_fetch_inc)(a0, a1)
#define vshmem_c11_atomic_fetch_inc_3(ctx, a0, a1) \
  VSHMEM_C11_AMO_STD(*(a0), shmem_ctx_, _atomic_fetch_inc)(ctx, a0, a1)

#define shmem_atomic_inc(...) VSHMEM_C11_BY_NARG(vshmem_c11_atomic_inc, __VA_ARGS__)
#define vshmem_c11_atomic_inc_2(a0, a1) VSHMEM_C11_AMO_STD(*(a0), shmem_, _atomic_inc)(a0, a1)
#define vshmem_c11_atomic_inc_3(ctx, a0, a1) \
  VSHMEM_C11_AMO_STD(*(a0), shmem_ctx_, _atomic_inc)(ctx, a0, a1)

#define shmem_atomic_fetch_add(...) VSHMEM_C11_BY_NARG(vshmem_c11_atomic_fetch_add, __VA_ARGS__)
#define vshmem_c11_atomic_fetch_add_3(a0, a1, a2) \
  VSHMEM_C11_AMO_STD(*(a0), shmem_, _atomic_fetch_add)(a0, a1, a2)
#define vshmem_c11_atomic_fetch_add_4(ctx, a0, a1, a2) \
  VSHMEM_C11_AMO_STD(*(a0), shmem_ctx_, _atomic_fetch_add)(ctx, a0, a1, a2)

#define shmem_atomic_add(...) VSHMEM_C11_BY_NARG(vshmem_c11_atomic_add, __VA_ARGS__)
#define vshmem_c11_atomic_add_3(a0, a1, a2) \
  VSHMEM_C11_AMO_STD(*(a0), shmem_, _atomic_add)(a0, a1, a2)
#define vshmem_c11_atomic_add_4(ctx, a0, a1, a2) \
  VSHMEM_C11_AMO_STD(*(a0), shmem_ctx_, _atomic_add)(ctx, a0, a1, a2)

#define shmem_atomic_compare_swap_nbi(...) \
  VSHMEM_C11_BY_NARG(vshmem_c11_atomic_compare_swap_nbi, __VA_ARGS__)
#define vshmem_c11_atomic_compare_swap_nbi_5(a0, a1, a2, a3, a4) \
  VSHMEM_C11_AMO_STD(*(a0), shmem_, _atomic_compare_swap_nbi)(a0, a1, a2, a3, a4)
#define vshmem_c11_atomic_compare_swap_nbi_6(ctx, a0, a1, a2, a3, a4) \
  VSHMEM_C11_AMO_STD(*(a0), shmem_ctx_, _atomic_compare_swap_nbi)(ctx, a0, a1, a2, a3, a4)

#define shmem_atomic_fetch_inc_nbi(...) \
  VSHMEM_C11_BY_NARG(vshmem_c11_atomic_fetch_inc_nbi, __VA_ARGS__)
#define vshmem_c11_atomic_fetch_inc_nbi_3(a0, a1, a2) \
  VSHMEM_C11_AMO_STD(*(a0), shmem_, _atomic_fetch_inc_nbi)(a0, a1, a2)
#define vshmem_c11_atomic_fetch_inc_nbi_4(ctx, a0, a1, a2) \
  VSHMEM_C11_AMO_STD(*(a0), shmem_ctx_, _atomic_fetch_inc_nbi)(ctx, a0, a1, a2)

#define shmem_atomic_fetch_add_nbi(...) \
  VSHMEM_C11_BY_NARG(vshmem_c11_atomic_fetch_add_nbi, __VA_ARGS__)
#define vshmem_c11_atomic_fetch_add_nbi_4(a0, a1, a2, a3) \
  VSHMEM_C11_AMO_STD(*(a0), shmem_, _atomic_fetch_add_nbi)(a0, a1, a2, a3)
#define vshmem_c11_atomic_fetch_add_nbi_5(ctx, a0, a1, a2, a3) \
  VSHMEM_C11_AMO_STD(*(a0), shmem_ctx_, _atomic_fetch_add_nbi)(ctx, a0, a1, a2, a3)

#define shmem_atomic_fetch_and(...) VSHMEM_C11_BY_NARG(vshmem_c11_atomic_fetch_and, __VA_ARGS__)
#define vshmem_c11_atomic_fetch_and_3(a0, a1, a2) \
  VSHMEM_C11_AMO_BIT(*(a0), shmem_, _atomic_fetch_and)(a0, a1, a2)
#define vshmem_c11_atomic_fetch_and_4(ctx, a0, a1, a2) \
  VSHMEM_C11_AMO_BIT(*(a0), shmem_ctx_, _atomic_fetch_and)(ctx, a0, a1, a2)

#define shmem_atomic_fetch_and_nbi(...) \
  VSHMEM_C11_BY_NARG(vshmem_c11_atomic_fetch_and_nbi, __VA_ARGS__)
#define vshmem_c11_atomic_fetch_and_nbi_4(a0, a1, a2, a3) \
  VSHMEM_C11_AMO_BIT(*(a0), shmem_, _atomic_fetch_and_nbi)(a0, a1, a2, a3)
#define vshmem_c11_atomic_fetch_and_nbi_5(ctx, a0, a1, a2, a3) \
  VSHMEM_C11_AMO_BIT(*(a0), shmem_ctx_, _atomic_fetch_and_nbi)(ctx, a0, a1, a2, a3)

#define shmem_atomic_and(...) VSHMEM_C11_BY_NARG(vshmem_c11_atomic_and, __VA_ARGS__)
#define vshmem_c11_atomic_and_3(a0, a1, a2) \
  VSHMEM_C11_AMO_BIT(*(a0), shmem_, _atomic_and)(a0, a1, a2)
#define vshmem_c11_atomic_and_4(ctx, a0, a1, a2) \
  VSHMEM_C11_AMO_BIT(*(a0), shmem_ctx_, _atomic_and)(ctx, a0, a1, a2)

#define shmem_atomic_fetch_or(...) VSHMEM_C11_BY_NARG(vshmem_c11_atomic_fetch_or, __VA_ARGS__)
#define vshmem_c11_atomic_fetch_or_3(a0, a1, a2) \
  VSHMEM_C11_AMO_BIT(*(a0), shmem_, _atomic_fetch_or)(a0, a1, a2)
#define vshmem_c11_atomic_fetch_or_4(ctx, a0, a1, a2) \
  VSHMEM_C11_AMO_BIT(*(a0), shmem_ctx_, _atomic_fetch_or)(ctx, a0, a1, a2)

#define shmem_atomic_fetch_or_nbi(...) \
  VSHMEM_C11_BY_NARG(vshmem_c11_atomic_fetch_or_nbi, __VA_ARGS__)
#define vshmem_c11_atomic_fetch_or_nbi_4(a0, a1, a2, a3) \
  VSHMEM_C11_AMO_BIT(*(a0), shmem_, _atomic_fetch_or_nbi)(a0, a1, a2, a3)
#define vshmem_c11_atomic_fetch_or_nbi_5(ctx, a0, a1, a2, a3) \
  VSHMEM_C11_AMO_BIT(*(a0), shmem_ctx_, _atomic_fetch_or_nbi)(ctx, a0, a1, a2, a3)

#define shmem_atomic_or(...) VSHMEM_C11_BY_NARG(vshmem_c11_atomic_or, __VA_ARGS__)
#define vshmem_c11_atomic_or_3(a0, a1, a2) VSHMEM_C11_AMO_BIT(*(a0), shmem_, _atomic_or)(a0, a1, a2)
#define vshmem_c11_atomic_or_4(ctx, a0, a1, a2) \
  VSHMEM_C11_AMO_BIT(*(a0), shmem_ctx_, _atomic_or)(ctx, a0, a1, a2)

#define shmem_atomic_fetch_xor(...) VSHMEM_C11_BY_NARG(vshmem_c11_atomic_fetch_xor, __VA_ARGS__)
#define vshmem_c11_atomic_fetch_xor_3(a0, a1, a2) \
  VSHMEM_C11_AMO_BIT(*(a0), shmem_, _atomic_fetch_xor)(a0, a1, a2)
#define vshmem_c11_atomic_fetch_xor_4(ctx, a0, a1, a2) \
  VSHMEM_C11_AMO_BIT(*(a0), shmem_ctx_, _atomic_fetch_xor)(ctx, a0, a1, a2)

#define shmem_atomic_fetch_xor_nbi(...) \
  VSHMEM_C11_BY_NARG(vshmem_c11_atomic_fetch_xor_nbi, __VA_ARGS__)
#define vshmem_c11_atomic_fetch_xor_nbi_4(a0, a1, a2, a3) \
  VSHMEM_C11_AMO_BIT(*(a0), shmem_, _atomic_fetch_xor_nbi)(a0, a1, a2, a3)
#define vshmem_c11_atomic_fetch_xor_nbi_5(ctx, a0, a1, a2, a3) \
  VSHMEM_C11_AMO_BIT(*(a0), shmem_ctx_, _atomic_fetch_xor_nbi)(ctx, a0, a1, a2, a3)

#define shmem_atomic_xor(...) VSHMEM_C11_BY_NARG(vshmem_c11_atomic_xor, __VA_ARGS__)
#define vshmem_c11_atomic_xor_3(a0, a1, a2) \
  VSHMEM_C11_AMO_BIT(*(a0), shmem_, _atomic_xor)(a0, a1, a2)
#define vshmem_c11_atomic_xor_4(ctx, a0, a1, a2) \
  VSHMEM_C11_AMO_BIT(*(a0), shmem_ctx_, _atomic_xor)(ctx, a0, a1, a2)

/* Deprecated atomics */
#define shmem_fadd(a0, a1, a2) VSHMEM_C11_OLD(*(a0), shmem_, _fadd)(a0, a1, a2)
#define shmem_finc(a0, a1) VSHMEM_C11_OLD(*(a0), shmem_, _finc)(a0, a1)
#define shmem_cswap(a0, a1, a2, a3) VSHMEM_C11_OLD(*(a0), shmem_, _cswap)(a0, a1, a2, a3)
#define shmem_add(a0, a1, a2) VSHMEM_C11_OLD(*(a0), shmem_, _add)(a0, a1, a2)
#define shmem_inc(a0, a1) VSHMEM_C11_OLD(*(a0), shmem_, _inc)(a0, a1)
#define shmem_swap(a0, a1, a2) VSHMEM_C11_OLD_EXT(*(a0), shmem_, _swap)(a0, a1, a2)
#define shmem_fetch(a0, a1) VSHMEM_C11_OLD_EXT(*(a0), shmem_, _fetch)(a0, a1)
#define shmem_set(a0, a1, a2) VSHMEM_C11_OLD_EXT(*(a0), shmem_, _set)(a0, a1, a2)

/* Point-to-point synchronization */
#define shmem_wait_until(a0, a1, a2) VSHMEM_C11_P2P(*(a0), shmem_, _wait_until)(a0, a1, a2)
#define shmem_wait_until_all(a0, a1, a2, a3, a4) \
  VSHMEM_C11_P2P(*(a0), shmem_, _wait_until_all)(a0, a1, a2, a3, a4)
#define shmem_wait_until_any(a0, a1, a2, a3, a4) \
  VSHMEM_C11_P2P(*(a0), shmem_, _wait_until_any)(a0, a1, a2, a3, a4)
#define shmem_wait_until_some(a0, a1, a2, a3, a4, a5) \
  VSHMEM_C11_P2P(*(a0), shmem_, _wait_until_some)(a0, a1, a2, a3, a4, a5)
#define shmem_wait_until_all_vector(a0, a1, a2, a3, a4) \
  VSHMEM_C11_P2P(*(a0), shmem_, _wait_until_all_vector)(a0, a1, a2, a3, a4)
#define shmem_wait_until_any_vector(a0, a1, a2, a3, a4) \
  VSHMEM_C11_P2P(*(a0), shmem_, _wait_until_any_vector)(a0, a1, a2, a3, a4)
#define shmem_wait_until_some_vector(a0, a1, a2, a3, a4, a5) \
  VSHMEM_C11_P2P(*(a0), shmem_, _wait_until_some_vector)(a0, a1, a2, a3, a4, a5)
#define shmem_test(a0, a1, a2) VSHMEM_C11_P2P(*(a0), shmem_, _test)(a0, a1, a2)
#define shmem_test_all(a0, a1, a2, a3, a4) \
  VSHMEM_C11_P2P(*(a0), shmem_, _test_all)(a0, a1, a2, a3, a4)
#define shmem_test_any(a0, a1, a2, a3, a4) \
  VSHMEM_C11_P2P(*(a0), shmem_, _test_any)(a0, a1, a2, a3, a4)
#define shmem_test_some(a0, a1, a2, a3, a4, a5) \
  VSHMEM_C11_P2P(*(a0), shmem_, _test_some)(a0, a1, a2, a3, a4, a5)
#define shmem_test_all_vector(a0, a1, a2, a3, a4) \
  VSHMEM_C11_P2P(*(a0), shmem_, _test_all_vector)(a0, a1, a2, a3, a4)
#define shmem_test_any_vector(a0, a1, a2, a3, a4) \
  VSHMEM_C11_P2P(*(a0), shmem_, _test_any_vector)(a0, a1, a2, a3, a4)
#define shmem_test_some_vector(a0, a1, a2, a3, a4, a5) \
  VSHMEM_C11_P2P(*(a0), shmem_, _test_some_vector)(a0, a1, a2, a3, a4, a5)
#define shmem_wait(a0, a1) VSHMEM_C11_OLD_WAIT(*(a0), shmem_, _wait)(a0, a1)

/* Collectives */
#define shmem_sync(...) VSHMEM_C11_BY_NARG(vshmem_c11_sync, __VA_ARGS__)
#define vshmem_c11_sync_1(team) shmem_team_sync(team)
#define vshmem_c11_sync_4(a0, a1, a2, a3) shmem_sync(a0, a1, a2, a3)
#define shmem_broadcast(a0, a1, a2, a3, a4) \
  VSHMEM_C11_RMA(*(a1), shmem_, _broadcast)(a0, a1, a2, a3, a4)
#define shmem_collect(a0, a1, a2, a3) VSHMEM_C11_RMA(*(a1), shmem_, _collect)(a0, a1, a2, a3)
#define shmem_fcollect(a0, a1, a2, a3) VSHMEM_C11_RMA(*(a1), shmem_, _fcollect)(a0, a1, a2, a3)
#define shmem_alltoall(a0, a1, a2, a3) VSHMEM_C11_RMA(*(a1), shmem_, _alltoall)(a0, a1, a2, a3)
#define shmem_alltoalls(a0, a1, a2, a3, a4, a5) \
  VSHMEM_C11_RMA(*(a1), shmem_, _alltoalls)(a0, a1, a2, a3, a4, a5)
#define shmem_and_reduce(a0, a1, a2, a3) \
  VSHMEM_C11_RED_BIT(*(a1), shmem_, _and_reduce)(a0, a1, a2, a3)
#define shmem_or_reduce(a0, a1, a2, a3) \
  VSHMEM_C11_RED_BIT(*(a1), shmem_, _or_reduce)(a0, a1, a2, a3)
#define shmem_xor_reduce(a0, a1, a2, a3) \
  VSHMEM_C11_RED_BIT(*(a1), shmem_, _xor_reduce)(a0, a1, a2, a3)
#define shmem_max_reduce(a0, a1, a2, a3) \
  VSHMEM_C11_RED_MINMAX(*(a1), shmem_, _max_reduce)(a0, a1, a2, a3)
#define shmem_min_reduce(a0, a1, a2, a3) \
  VSHMEM_C11_RED_MINMAX(*(a1), shmem_, _min_reduce)(a0, a1, a2, a3)
#define shmem_sum_reduce(a0, a1, a2, a3) \
  VSHMEM_C11_RED_ARITH(*(a1), shmem_, _sum_reduce)(a0, a1, a2, a3)
#define shmem_prod_reduce(a0, a1, a2, a3) \
  VSHMEM_C11_RED_ARITH(*(a1), shmem_, _prod_reduce)(a0, a1, a2, a3)

#endif
