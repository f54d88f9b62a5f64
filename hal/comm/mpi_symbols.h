/* Our declarations of the Open MPI ABI (libmpi.so.40, Open MPI 3.x-5.x), loaded with dlopen by
 * hal/comm/comm.c: no MPI header is needed to build xreplay. Open MPI's handles (MPI_Comm,
 * MPI_Datatype, MPI_Op, MPI_Request, MPI_Errhandler) are pointers, and its predefined ones
 * (MPI_COMM_WORLD, MPI_FLOAT, MPI_SUM, ...) the addresses of the exported objects named below.
 * tests/hal:comm_abi_test checks every entry and constant against mpi.h where it is installed.
 * Other MPI implementations (MPICH's integer handles) have another ABI and are not loaded. */
#ifndef XR_HAL_COMM_MPI_SYMBOLS_H
#define XR_HAL_COMM_MPI_SYMBOLS_H

#include <stddef.h>

typedef void *xr_mpi_handle_t; /* MPI_Comm, MPI_Datatype, MPI_Op, MPI_Request, MPI_Errhandler */

typedef struct xr_mpi_status { /* MPI_Status */
  int source, tag, error;
  int cancelled; /* Open MPI's own fields */
  size_t ucount;
} xr_mpi_status_t;

/* MPI_User_function */
typedef void (*xr_mpi_user_fn_t)(void *in, void *inout, int *count, xr_mpi_handle_t *datatype);

enum {
  XR_MPI_SUCCESS = 0,
  XR_MPI_THREAD_SERIALIZED = 2,
  XR_MPI_THREAD_MULTIPLE = 3,
  XR_MPI_MAX_ERROR_STRING = 256,
  XR_MPI_MAX_LIBRARY_VERSION_STRING = 256,
};

/* X(need, return type, symbol, (parameters)) */
#define XR_MPI_SYMBOLS(X)                                                               \
  X(REQUIRED, int, MPI_Initialized, (int *))                                            \
  X(REQUIRED, int, MPI_Finalized, (int *))                                              \
  X(REQUIRED, int, MPI_Init_thread, (int *, char ***, int, int *))                      \
  X(REQUIRED, int, MPI_Finalize, (void))                                                \
  X(REQUIRED, int, MPI_Abort, (xr_mpi_handle_t, int))                                   \
  X(REQUIRED, int, MPI_Comm_rank, (xr_mpi_handle_t, int *))                             \
  X(REQUIRED, int, MPI_Comm_size, (xr_mpi_handle_t, int *))                             \
  X(REQUIRED, int, MPI_Comm_set_errhandler, (xr_mpi_handle_t, xr_mpi_handle_t))         \
  X(REQUIRED, int, MPI_Comm_split, (xr_mpi_handle_t, int, int, xr_mpi_handle_t *))      \
  X(REQUIRED, int, MPI_Comm_free, (xr_mpi_handle_t *))                                  \
  X(REQUIRED, int, MPI_Error_string, (int, char *, int *))                              \
  X(REQUIRED, int, MPI_Get_library_version, (char *, int *))                            \
  X(REQUIRED, int, MPI_Op_create, (xr_mpi_user_fn_t, int, xr_mpi_handle_t *))           \
  X(REQUIRED, int, MPI_Op_free, (xr_mpi_handle_t *))                                    \
  X(REQUIRED, int, MPI_Iallreduce,                                                      \
    (const void *, void *, int, xr_mpi_handle_t, xr_mpi_handle_t, xr_mpi_handle_t,      \
     xr_mpi_handle_t *))                                                                \
  X(REQUIRED, int, MPI_Iallgather,                                                      \
    (const void *, int, xr_mpi_handle_t, void *, int, xr_mpi_handle_t, xr_mpi_handle_t, \
     xr_mpi_handle_t *))                                                                \
  X(REQUIRED, int, MPI_Ireduce_scatter_block,                                           \
    (const void *, void *, int, xr_mpi_handle_t, xr_mpi_handle_t, xr_mpi_handle_t,      \
     xr_mpi_handle_t *))                                                                \
  X(REQUIRED, int, MPI_Ibcast,                                                          \
    (void *, int, xr_mpi_handle_t, int, xr_mpi_handle_t, xr_mpi_handle_t *))            \
  X(REQUIRED, int, MPI_Ialltoall,                                                       \
    (const void *, int, xr_mpi_handle_t, void *, int, xr_mpi_handle_t, xr_mpi_handle_t, \
     xr_mpi_handle_t *))                                                                \
  X(REQUIRED, int, MPI_Ibarrier, (xr_mpi_handle_t, xr_mpi_handle_t *))                  \
  X(REQUIRED, int, MPI_Test, (xr_mpi_handle_t *, int *, xr_mpi_status_t *))

/* The predefined objects: X(field, exported symbol). */
#define XR_MPI_OBJECTS(X)                  \
  X(comm_world, ompi_mpi_comm_world)       \
  X(errors_return, ompi_mpi_errors_return) \
  X(type_byte, ompi_mpi_byte)              \
  X(type_float, ompi_mpi_float)            \
  X(type_double, ompi_mpi_double)          \
  X(type_int8, ompi_mpi_int8_t)            \
  X(type_int16, ompi_mpi_int16_t)          \
  X(type_int32, ompi_mpi_int32_t)          \
  X(type_int64, ompi_mpi_int64_t)          \
  X(type_uint8, ompi_mpi_uint8_t)          \
  X(type_uint16, ompi_mpi_uint16_t)        \
  X(type_bool, ompi_mpi_c_bool)            \
  X(op_sum, ompi_mpi_op_sum)               \
  X(op_lor, ompi_mpi_op_lor)

#endif
