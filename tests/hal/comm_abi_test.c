/* Our declarations of Open MPI's ABI (hal/comm/mpi_symbols.h) against mpi.h, and of NCCL's
 * (hal/comm/nccl_symbols.h) against nccl.h, compiled with the system compiler where the headers
 * are installed (Debian's libopenmpi-dev; the CUDA toolkit's /usr/local/cuda/include/nccl.h):
 * every prototype and constant, each table entry checked once against the vendor's symbol and
 * once against our field. The libraries, where present, export every name of the tables.
 * Skips say which header or library is absent. */
#include <criterion/criterion.h>
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "hal/comm/mpi_symbols.h"
#include "hal/comm/nccl_symbols.h"
#include "tests/gpu/abi_compile.h"

#define MPI_INCLUDE "/usr/lib/x86_64-linux-gnu/openmpi/include"
#define CUDA_INCLUDE "/usr/local/cuda/include"

static int compile(const char *source, const char *flags) {
  char all[1024];
  snprintf(all, sizeof all, "-std=c11 -Wall -Werror %s", flags);
  return xr_test_compile(source, "c", "cc", all);
}

/* The handle types and constants our declarations assume, and the objects they name. */
static const char mpi_check[] =
    "#include <mpi.h>\n"
    "#include \"hal/comm/mpi_symbols.h\"\n"
    "_Static_assert(sizeof(MPI_Comm) == sizeof(void *), \"MPI_Comm\");\n"
    "_Static_assert(sizeof(MPI_Datatype) == sizeof(void *), \"MPI_Datatype\");\n"
    "_Static_assert(sizeof(MPI_Op) == sizeof(void *), \"MPI_Op\");\n"
    "_Static_assert(sizeof(MPI_Request) == sizeof(void *), \"MPI_Request\");\n"
    "_Static_assert(sizeof(MPI_Status) == sizeof(xr_mpi_status_t), \"MPI_Status\");\n"
    "_Static_assert(offsetof(MPI_Status, MPI_ERROR) == offsetof(xr_mpi_status_t, error), \"\");\n"
    "_Static_assert((int)XR_MPI_SUCCESS == (int)MPI_SUCCESS, \"MPI_SUCCESS\");\n"
    "_Static_assert((int)XR_MPI_THREAD_SERIALIZED == (int)MPI_THREAD_SERIALIZED, \"SERIALIZED\");\n"
    "_Static_assert((int)XR_MPI_THREAD_MULTIPLE == (int)MPI_THREAD_MULTIPLE, \"MULTIPLE\");\n"
    "_Static_assert((int)XR_MPI_MAX_ERROR_STRING >= (int)MPI_MAX_ERROR_STRING, \"error string\");\n"
    "_Static_assert((int)XR_MPI_MAX_LIBRARY_VERSION_STRING >= (int)MPI_MAX_LIBRARY_VERSION_STRING, "
    "\"\");\n"
    /* The exported objects are what the predefined handles point at. */
    "#define OBJECT(field, symbol) void *object_##field = &symbol;\n"
    "XR_MPI_OBJECTS(OBJECT)\n"
    "void *world = MPI_COMM_WORLD; void *sum = MPI_SUM; void *in_place = MPI_IN_PLACE;\n";

/* Prototypes: our parameter lists (mpi_symbols.h), written in the vendor's types, must be the
 * vendor's: a mismatch is an incompatible-pointer-types error. */
static const char mpi_prototypes[] =
    "#include <mpi.h>\n"
    "int (*a)(const void *, void *, int, MPI_Datatype, MPI_Op, MPI_Comm, MPI_Request *) = "
    "MPI_Iallreduce;\n"
    "int (*b)(const void *, int, MPI_Datatype, void *, int, MPI_Datatype, MPI_Comm, "
    "MPI_Request *) = MPI_Iallgather;\n"
    "int (*c)(const void *, void *, int, MPI_Datatype, MPI_Op, MPI_Comm, MPI_Request *) = "
    "MPI_Ireduce_scatter_block;\n"
    "int (*d)(void *, int, MPI_Datatype, int, MPI_Comm, MPI_Request *) = MPI_Ibcast;\n"
    "int (*e)(const void *, int, MPI_Datatype, void *, int, MPI_Datatype, MPI_Comm, "
    "MPI_Request *) = MPI_Ialltoall;\n"
    "int (*f)(MPI_Comm, MPI_Request *) = MPI_Ibarrier;\n"
    "int (*g)(MPI_Request *, int *, MPI_Status *) = MPI_Test;\n"
    "int (*h)(MPI_User_function *, int, MPI_Op *) = MPI_Op_create;\n"
    "int (*i)(int *, char ***, int, int *) = MPI_Init_thread;\n"
    "int (*j)(MPI_Comm, MPI_Errhandler) = MPI_Comm_set_errhandler;\n"
    "int (*k)(MPI_Comm, int) = MPI_Abort;\n"
    "int (*l)(MPI_Comm, int, int, MPI_Comm *) = MPI_Comm_split;\n"
    "int (*m)(MPI_Comm *) = MPI_Comm_free;\n";

static const char nccl_check[] =
    "#include <nccl.h>\n"
    "#include \"hal/comm/nccl_symbols.h\"\n"
    "ncclResult_t (*v)(int *) = ncclGetVersion;\n"
    "ncclResult_t (*u)(ncclUniqueId *) = ncclGetUniqueId;\n"
    "ncclResult_t (*i)(ncclComm_t *, int, ncclUniqueId, int) = ncclCommInitRank;\n"
    "ncclResult_t (*d)(ncclComm_t) = ncclCommDestroy;\n"
    "ncclResult_t (*ab)(ncclComm_t) = ncclCommAbort;\n"
    "ncclResult_t (*e)(ncclComm_t, ncclResult_t *) = ncclCommGetAsyncError;\n"
    "const char *(*s)(ncclResult_t) = ncclGetErrorString;\n"
    "ncclResult_t (*ar)(const void *, void *, size_t, ncclDataType_t, ncclRedOp_t, ncclComm_t, "
    "cudaStream_t) = ncclAllReduce;\n"
    "ncclResult_t (*ag)(const void *, void *, size_t, ncclDataType_t, ncclComm_t, cudaStream_t) "
    "= ncclAllGather;\n"
    "ncclResult_t (*rs)(const void *, void *, size_t, ncclDataType_t, ncclRedOp_t, ncclComm_t, "
    "cudaStream_t) = ncclReduceScatter;\n"
    "ncclResult_t (*bc)(const void *, void *, size_t, ncclDataType_t, int, ncclComm_t, "
    "cudaStream_t) = ncclBroadcast;\n"
    "ncclResult_t (*se)(const void *, size_t, ncclDataType_t, int, ncclComm_t, cudaStream_t) = "
    "ncclSend;\n"
    "ncclResult_t (*re)(void *, size_t, ncclDataType_t, int, ncclComm_t, cudaStream_t) = "
    "ncclRecv;\n"
    "ncclResult_t (*gs)(void) = ncclGroupStart;\n"
    "ncclResult_t (*ge)(void) = ncclGroupEnd;\n"
    "_Static_assert(sizeof(ncclResult_t) == sizeof(int), \"ncclResult_t\");\n"
    "_Static_assert(sizeof(ncclDataType_t) == sizeof(int), \"ncclDataType_t\");\n"
    "_Static_assert(sizeof(ncclRedOp_t) == sizeof(int), \"ncclRedOp_t\");\n"
    "_Static_assert(sizeof(ncclComm_t) == sizeof(void *), \"ncclComm_t\");\n"
    "_Static_assert(sizeof(cudaStream_t) == sizeof(void *), \"cudaStream_t\");\n"
    "_Static_assert(sizeof(ncclUniqueId) == sizeof(xr_nccl_unique_id_t), \"ncclUniqueId\");\n"
    "#define SAME(ours, theirs) _Static_assert((int)(ours) == (int)(theirs), #theirs);\n"
    "SAME(XR_NCCL_SUCCESS, ncclSuccess) SAME(XR_NCCL_IN_PROGRESS, ncclInProgress)\n"
    "SAME(XR_NCCL_SUM, ncclSum) SAME(XR_NCCL_INT8, ncclInt8) SAME(XR_NCCL_UINT8, ncclUint8)\n"
    "SAME(XR_NCCL_INT32, ncclInt32) SAME(XR_NCCL_INT64, ncclInt64)\n"
    "SAME(XR_NCCL_FLOAT16, ncclFloat16) SAME(XR_NCCL_FLOAT32, ncclFloat32)\n"
    "SAME(XR_NCCL_FLOAT64, ncclFloat64) SAME(XR_NCCL_BFLOAT16, ncclBfloat16)\n";

/* Our table, in our types, has the parameter lists checked above (the same text with our
 * types): one row per entry, so an entry added without a checked row fails. */
static const char nccl_ours[] =
    "#include \"hal/comm/nccl_symbols.h\"\n"
    "#define OURS(need, ret, symbol, params) typedef ret (*ours_##symbol) params;\n"
    "XR_NCCL_SYMBOLS(OURS)\n"
    "typedef xr_nccl_comm_t C; typedef xr_nccl_stream_t S;\n"
    "ours_ncclGetVersion v = (int (*)(int *))0;\n"
    "ours_ncclGetUniqueId u = (int (*)(xr_nccl_unique_id_t *))0;\n"
    "ours_ncclCommInitRank i = (int (*)(C *, int, xr_nccl_unique_id_t, int))0;\n"
    "ours_ncclCommDestroy d = (int (*)(C))0;\n"
    "ours_ncclCommAbort ab = (int (*)(C))0;\n"
    "ours_ncclCommGetAsyncError e = (int (*)(C, int *))0;\n"
    "ours_ncclGetErrorString s = (const char *(*)(int))0;\n"
    "ours_ncclAllReduce ar = (int (*)(const void *, void *, size_t, int, int, C, S))0;\n"
    "ours_ncclAllGather ag = (int (*)(const void *, void *, size_t, int, C, S))0;\n"
    "ours_ncclReduceScatter rs = (int (*)(const void *, void *, size_t, int, int, C, S))0;\n"
    "ours_ncclBroadcast bc = (int (*)(const void *, void *, size_t, int, int, C, S))0;\n"
    "ours_ncclSend se = (int (*)(const void *, size_t, int, int, C, S))0;\n"
    "ours_ncclRecv re = (int (*)(void *, size_t, int, int, C, S))0;\n"
    "ours_ncclGroupStart gs = (int (*)(void))0;\n"
    "ours_ncclGroupEnd ge = (int (*)(void))0;\n"
    "#define COUNT(need, ret, symbol, params) +1\n"
    "_Static_assert(0 XR_NCCL_SYMBOLS(COUNT) == 15, \"a row for every entry\");\n";

static bool readable(const char *path) {
  return access(path, R_OK) == 0;
}

Test(comm_abi, mpi_declarations_equal_mpi_h) {
  if (!readable(MPI_INCLUDE "/mpi.h")) cr_skip_test("no " MPI_INCLUDE "/mpi.h (libopenmpi-dev)");
  cr_assert_eq(compile(mpi_check, "-I" MPI_INCLUDE), 0, "mpi_symbols.h differs from mpi.h");
  cr_assert_eq(compile(mpi_prototypes, "-I" MPI_INCLUDE), 0, "the prototypes differ from mpi.h");
}

Test(comm_abi, nccl_declarations_equal_nccl_h) {
  if (!readable(CUDA_INCLUDE "/nccl.h")) cr_skip_test("no " CUDA_INCLUDE "/nccl.h");
  cr_assert_eq(compile(nccl_check, "-I" CUDA_INCLUDE), 0, "nccl_symbols.h differs from nccl.h");
  cr_assert_eq(compile(nccl_ours, ""), 0, "a table entry lacks its checked prototype");
}

Test(comm_abi, a_wrong_prototype_fails_the_check) {
  cr_assert_neq(compile("#include \"hal/comm/nccl_symbols.h\"\n"
                        "#define OURS(need, ret, symbol, params) typedef ret (*ours_##symbol) "
                        "params;\nXR_NCCL_SYMBOLS(OURS)\n"
                        "ours_ncclSend se = (int (*)(void *, int))0;\n",
                        ""),
                0);
  if (readable(MPI_INCLUDE "/mpi.h"))
    cr_assert_neq(
        compile("#include <mpi.h>\nint (*f)(MPI_Comm) = MPI_Ibarrier;\n", "-I" MPI_INCLUDE), 0);
}

/* Every name of a table resolves in the library (a misspelt one would fail to load). */
static void exports_every_name(const char *path, const char *const *names, size_t count) {
  void *handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!handle) cr_skip_test("%s does not load: %s", path, dlerror());
  for (size_t k = 0; k < count; k++)
    cr_expect_not_null(dlsym(handle, names[k]), "%s lacks %s", path, names[k]);
  dlclose(handle);
}

Test(comm_abi, the_libraries_export_every_name) {
#define NAME(need, ret, symbol, params) #symbol,
#define OBJECT_NAME(field, symbol) #symbol,
  static const char *const mpi_names[] = {XR_MPI_SYMBOLS(NAME) XR_MPI_OBJECTS(OBJECT_NAME)};
  static const char *const nccl_names[] = {XR_NCCL_SYMBOLS(NAME)};
  exports_every_name("libmpi.so.40", mpi_names, sizeof mpi_names / sizeof *mpi_names);
  if (readable("/usr/local/cuda/lib64/libnccl.so.2"))
    exports_every_name("/usr/local/cuda/lib64/libnccl.so.2", nccl_names,
                       sizeof nccl_names / sizeof *nccl_names);
}
