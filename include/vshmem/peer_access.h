/* Peer-access utilities: directional CUDA peer access between two local devices, on their
 * primary contexts. Device numbers are CUDA ordinals as this process sees them (after
 * CUDA_VISIBLE_DEVICES). Peer access is directional: enabling from_dev -> to_dev lets kernels on
 * from_dev reach memory allocated on to_dev through ordinary (cudaMalloc-style) allocations; it
 * is not needed for the symmetric heap, whose mappings carry their own access rights.
 *
 * Each call returns SHMEMX_PEER_ACCESS_SUCCESS (0) or a non-zero code, with a message on stderr
 * naming the call and the cause. Without a CUDA driver they fail cleanly with
 * SHMEMX_PEER_ACCESS_ERR_NO_DEVICE. They may be called before shmem_init. */
#ifndef VSHMEM_PEER_ACCESS_H_
#define VSHMEM_PEER_ACCESS_H_

#ifdef __cplusplus
extern "C" {
#endif

enum {
  SHMEMX_PEER_ACCESS_SUCCESS = 0,
  SHMEMX_PEER_ACCESS_ERR_NO_DEVICE = 1,     /* no driver, or no usable device */
  SHMEMX_PEER_ACCESS_ERR_INVALID_ARG = 2,   /* bad ordinal, null pointer, from_dev == to_dev */
  SHMEMX_PEER_ACCESS_ERR_NOT_SUPPORTED = 3, /* the topology does not allow this direction */
  SHMEMX_PEER_ACCESS_ERR_DRIVER = 4         /* a driver call failed */
};

/* *can_access = 1 when from_dev can access to_dev's memory directly (cuDeviceCanAccessPeer),
 * else 0; from_dev == to_dev gives 1. Only a query: nothing changes. *can_access is written
 * only on success. */
int shmemx_peer_access_query(int from_dev, int to_dev, int* can_access);

/* Lets from_dev's primary context access to_dev's memory. Enabling what is already enabled
 * succeeds. The primary contexts of both devices are retained until the process exits, since the
 * setting belongs to the context and would vanish with it. */
int shmemx_peer_access_enable(int from_dev, int to_dev);

/* Undoes shmemx_peer_access_enable. Disabling what is not enabled succeeds. Complete all work
 * that uses peer memory through this direction first. */
int shmemx_peer_access_disable(int from_dev, int to_dev);

#ifdef __cplusplus
}
#endif

#endif /* VSHMEM_PEER_ACCESS_H_ */
