/* Teams and communication contexts (OpenSHMEM 1.5 sections 9.4, 9.5).
 *
 * SHMEM_TEAM_WORLD holds every PE; SHMEM_TEAM_SHARED holds the PEs whose symmetric memory is
 * mapped into this PE's address space (shmem_ptr works for them), this PE included;
 * SHMEMX_TEAM_NODE (shmemx.h) holds every PE of this PE's node, mapped or not. Teams are
 * made by splitting a parent team, collectively over the parent; a PE outside the new team gets
 * SHMEM_TEAM_INVALID. Up to 124 user teams may be live on a PE at once (team resources are a
 * fixed pool of symmetric memory reserved by shmem_init); a split beyond that returns nonzero on
 * every PE of the parent. */
#ifndef VSHMEM_SHMEM_TEAM_H
#define VSHMEM_SHMEM_TEAM_H

#include "vshmem/shmem_types.h"

VSHMEM_BEGIN_C

extern shmem_team_t SHMEM_TEAM_WORLD;
extern shmem_team_t SHMEM_TEAM_SHARED;
/* An extension (it is declared here so that device code can name it as the predefined teams):
 * the PEs of this PE's node (same host, or same VSHMEM_NODE_ID), mapped or not, in world order. */
extern shmem_team_t SHMEMX_TEAM_NODE;

/* This PE's number in team / the team's size; -1 for SHMEM_TEAM_INVALID or an invalid handle. */
VSHMEM_HOSTDEV int shmem_team_my_pe(shmem_team_t team);
VSHMEM_HOSTDEV int shmem_team_n_pes(shmem_team_t team);
/* Copies the fields selected by config_mask (SHMEM_TEAM_NUM_CONTEXTS) into *config; 0 on
 * success, nonzero for an invalid team. */
int shmem_team_get_config(shmem_team_t team, long config_mask, shmem_team_config_t* config);
/* src_pe of src_team as numbered in dest_team; -1 when it is not a member or a team is
 * invalid. */
VSHMEM_HOSTDEV int shmem_team_translate_pe(shmem_team_t src_team, int src_pe,
                                           shmem_team_t dest_team);
/* Collective over parent_team, same arguments on every member. The new team holds the parent's
 * PEs start, start + stride, ..., start + (size - 1) * stride. 0 on success; nonzero (and
 * *new_team = SHMEM_TEAM_INVALID) for invalid arguments or when no team slot is free. */
int shmem_team_split_strided(shmem_team_t parent_team, int start, int stride, int size,
                             const shmem_team_config_t* config, long config_mask,
                             shmem_team_t* new_team);
/* Collective over parent_team: rows of xrange consecutive parent PEs form the x-axis teams, and
 * the PEs of one column (same parent number modulo xrange) the y-axis teams. xrange larger than
 * the parent is taken as the parent's size. */
int shmem_team_split_2d(shmem_team_t parent_team, int xrange,
                        const shmem_team_config_t* xaxis_config, long xaxis_mask,
                        shmem_team_t* xaxis_team, const shmem_team_config_t* yaxis_config,
                        long yaxis_mask, shmem_team_t* yaxis_team);
/* Collective over team. Destroys the contexts still open on it. SHMEM_TEAM_INVALID: no action;
 * a predefined team: an error. */
void shmem_team_destroy(shmem_team_t team);
/* As shmem_ptr, with pe numbered in team. */
VSHMEM_HOSTDEV void* shmem_team_ptr(shmem_team_t team, const void* dest, int pe);

/* Contexts. options: SHMEM_CTX_SERIALIZED, SHMEM_CTX_PRIVATE (only the creating thread may use
 * it; checked), SHMEM_CTX_NOSTORE. 0 on success; nonzero and *ctx = SHMEM_CTX_INVALID on failure
 * (unknown options, invalid team). PE numbers passed with a context created from a team are
 * numbers in that team. */
int shmem_ctx_create(long options, shmem_ctx_t* ctx);
int shmem_team_create_ctx(shmem_team_t team, long options, shmem_ctx_t* ctx);
/* Completes the context's operations (quiet) and releases it. SHMEM_CTX_INVALID: no action. */
void shmem_ctx_destroy(shmem_ctx_t ctx);
/* The team the context was created from (SHMEM_TEAM_WORLD for SHMEM_CTX_DEFAULT and for
 * shmem_ctx_create); nonzero and SHMEM_TEAM_INVALID for an invalid context. */
int shmem_ctx_get_team(shmem_ctx_t ctx, shmem_team_t* team);

/* Profiling control: vshmem has no profiling layer of its own; the level is recorded (and
 * logged at VSHMEM_DEBUG=info) for tools that interpose on shmem_pcontrol. */
void shmem_pcontrol(int level, ...);

VSHMEM_END_C

#endif
