/* Direct DirectML lane: runs DirectML operator descriptors through DirectML.dll, no ONNX Runtime.
 *
 * A long-lived Windows program (built with MinGW, run under Wine) that creates one D3D12 device
 * and one DirectML device, then serves requests read from stdin, one per line:
 *
 *   info                              device information (also printed once at start)
 *   run <id> <type> Name=kind:value   run one DirectML operator: its DML_OPERATOR_TYPE value and the
 *                                     members of its desc (see parse_request)
 *   time <warmup> <repeats> <id> <type> Name=kind:value
 *                                     the same, with the operator dispatched <warmup> times untimed
 *                                     and <repeats> times between two D3D12 timestamp queries each
 *                                     (the GPU time of each dispatch, see record)
 *   copy <bytes> <warmup> <repeats>   the GPU time of a CopyBufferRegion of <bytes> inside the arena,
 *                                     timed the same way (the copy engine's side of the yardstick)
 *   debug crash | debug hang          test hooks for the client's crash and timeout handling
 *   debug pack <id> <type> ...        echo the desc a run request would pack, member by member
 *   quit
 *
 * Every answer is one line on stdout starting with "@@odb " followed by a JSON object. Tensor
 * data travels through raw little-endian files in the work folder given with --workdir:
 * r<id>_in<k>.bin (written by the client) and r<id>_out<k>.bin (written here). The program does
 * not interpret values, it only knows element sizes.
 *
 * Per request: CreateOperator, CompileOperator, CreateOperatorInitializer, one command list that
 * uploads the inputs, dispatches the initializer and the operator and reads the outputs back.
 * All tensors live in one default-heap UAV buffer ("arena") at 256-byte aligned offsets. Output
 * regions are prefilled with 0xA5 bytes, so an output that DirectML never writes is visible.
 *
 * Usage: harness.exe --workdir <folder> [--dll <path of DirectML.dll>]
 */
#define COBJMACROS
#include <windows.h>
#include <initguid.h>
#include <d3d12.h>
#include <dxgi1_4.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dml_abi.h"

#define MAXD 8            /* dimensions (and window entries) a request may carry */
#define MAXT 3            /* tensors per side (inputs or outputs) */
#define ALIGN 256
#define SENTINEL 0xA5
#define MAX_ARENA (1ull << 31)
#define MAX_REPEATS 10000 /* timed dispatches per request */

/* ============================================================================================ */
/* Small helpers                                                                                 */
/* ============================================================================================ */

typedef struct { UINT v[MAXD]; UINT n; } Dims;

typedef struct {
    const char *stage;    /* the call that failed */
    HRESULT hr;
    char msg[512];
} Fail;

static LARGE_INTEGER g_freq;

static double now_ms(void) {
    LARGE_INTEGER t;
    QueryPerformanceCounter(&t);
    return 1000.0 * (double)t.QuadPart / (double)g_freq.QuadPart;
}

static UINT64 align_up(UINT64 x, UINT64 a) { return (x + a - 1) / a * a; }

static int fail(Fail *f, const char *stage, HRESULT hr, const char *fmt, const char *arg) {
    f->stage = stage;
    f->hr = hr;
    snprintf(f->msg, sizeof f->msg, fmt, arg ? arg : "");
    return 0;
}

static int check(Fail *f, HRESULT hr, const char *stage) {
    if (SUCCEEDED(hr))
        return 1;
    return fail(f, stage, hr, "%s", "");
}

static const char *hr_name(HRESULT hr) {
    switch ((unsigned long)hr) {
    case 0x80070057ul: return "E_INVALIDARG";
    case 0x80004001ul: return "E_NOTIMPL";
    case 0x8007000Eul: return "E_OUTOFMEMORY";
    case 0x80004005ul: return "E_FAIL";
    case 0x887A0005ul: return "DXGI_ERROR_DEVICE_REMOVED";
    case 0x887A0006ul: return "DXGI_ERROR_DEVICE_HUNG";
    case 0x887A0007ul: return "DXGI_ERROR_DEVICE_RESET";
    case 0x887A0004ul: return "DXGI_ERROR_UNSUPPORTED";
    case 0x80070002ul: return "ERROR_FILE_NOT_FOUND";
    default: return "";
    }
}

/* Write s as a JSON string literal. */
static void json_str(FILE *o, const char *s) {
    fputc('"', o);
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            fprintf(o, "\\%c", c);
        else if (c < 0x20)
            fprintf(o, "\\u%04x", c);
        else
            fputc(c, o);
    }
    fputc('"', o);
}

/* ============================================================================================ */
/* Data types                                                                                    */
/* ============================================================================================ */

static const struct { const char *name; DML_TENSOR_DATA_TYPE type; UINT size; } DTYPES[] = {
    {"FLOAT32", DML_TENSOR_DATA_TYPE_FLOAT32, 4}, {"FLOAT16", DML_TENSOR_DATA_TYPE_FLOAT16, 2},
    {"UINT32", DML_TENSOR_DATA_TYPE_UINT32, 4},   {"UINT16", DML_TENSOR_DATA_TYPE_UINT16, 2},
    {"UINT8", DML_TENSOR_DATA_TYPE_UINT8, 1},     {"INT32", DML_TENSOR_DATA_TYPE_INT32, 4},
    {"INT16", DML_TENSOR_DATA_TYPE_INT16, 2},     {"INT8", DML_TENSOR_DATA_TYPE_INT8, 1},
    {"FLOAT64", DML_TENSOR_DATA_TYPE_FLOAT64, 8}, {"UINT64", DML_TENSOR_DATA_TYPE_UINT64, 8},
    {"INT64", DML_TENSOR_DATA_TYPE_INT64, 8},
};
#define N_DTYPES (sizeof DTYPES / sizeof DTYPES[0])

static DML_TENSOR_DATA_TYPE dtype_of(const char *name) {
    if (strncmp(name, "DML_TENSOR_DATA_TYPE_", 21) == 0)
        name += 21;
    for (size_t i = 0; i < N_DTYPES; i++)
        if (strcmp(DTYPES[i].name, name) == 0)
            return DTYPES[i].type;
    return DML_TENSOR_DATA_TYPE_UNKNOWN;
}

static UINT dtype_size(DML_TENSOR_DATA_TYPE t) {
    for (size_t i = 0; i < N_DTYPES; i++)
        if (DTYPES[i].type == t)
            return DTYPES[i].size;
    return 0;
}

/* ============================================================================================ */
/* Device context                                                                                */
/* ============================================================================================ */

static struct {
    ID3D12Device *dev;
    ID3D12CommandQueue *queue;
    ID3D12CommandAllocator *alloc;
    ID3D12GraphicsCommandList *list;
    ID3D12Fence *fence;
    HANDLE event;
    UINT64 fence_value;
    IDMLDevice *dml;
    IDMLCommandRecorder *recorder;
    ID3D12DescriptorHeap *heap;
    UINT heap_size, heap_inc;
    ID3D12Resource *arena, *upload, *readback;   /* the arena and its staging buffers */
    D3D12_RESOURCE_STATES arena_state;
    UINT64 arena_size;
    BYTE *upload_ptr;
    ID3D12Resource *copy_dst;                    /* the destination of the copy yardstick */
    UINT64 copy_dst_size;
    ID3D12QueryHeap *queries;                    /* timestamps of timed dispatches */
    ID3D12Resource *query_readback;
    UINT query_count;
    UINT64 timestamp_frequency;                  /* ticks per second of the queue's timestamps */
    char adapter[256];
    UINT vendor_id, device_id;
    char dll_path[MAX_PATH * 2];
    char workdir[MAX_PATH * 2];
    UINT max_level;
    UINT shader_model;     /* D3D_SHADER_MODEL the D3D12 device reports (0x51, 0x60, ...), 0 if none */
    BOOL dtype_ok[N_DTYPES];
    double t_d3d12, t_dml;
    int fatal;            /* the device is lost: answer, then exit */
} G;

static int pick_adapter(IDXGIAdapter1 **out, Fail *f) {
    IDXGIFactory1 *factory = NULL;
    if (!check(f, CreateDXGIFactory1(&IID_IDXGIFactory1, (void **)&factory), "CreateDXGIFactory1"))
        return 0;
    HRESULT hr = IDXGIFactory1_EnumAdapters1(factory, 0, out);
    IDXGIFactory1_Release(factory);
    if (!check(f, hr, "EnumAdapters1"))
        return 0;
    DXGI_ADAPTER_DESC1 desc;
    if (SUCCEEDED(IDXGIAdapter1_GetDesc1(*out, &desc))) {
        WideCharToMultiByte(CP_UTF8, 0, desc.Description, -1, G.adapter, sizeof G.adapter, NULL, NULL);
        G.vendor_id = desc.VendorId;
        G.device_id = desc.DeviceId;
    }
    return 1;
}

static int create_queue(Fail *f) {
    D3D12_COMMAND_QUEUE_DESC qd = {D3D12_COMMAND_LIST_TYPE_DIRECT, 0, D3D12_COMMAND_QUEUE_FLAG_NONE, 0};
    if (!check(f, ID3D12Device_CreateCommandQueue(G.dev, &qd, &IID_ID3D12CommandQueue, (void **)&G.queue),
               "CreateCommandQueue"))
        return 0;
    if (!check(f, ID3D12Device_CreateCommandAllocator(G.dev, D3D12_COMMAND_LIST_TYPE_DIRECT,
                                                      &IID_ID3D12CommandAllocator, (void **)&G.alloc),
               "CreateCommandAllocator"))
        return 0;
    if (!check(f, ID3D12Device_CreateCommandList(G.dev, 0, D3D12_COMMAND_LIST_TYPE_DIRECT, G.alloc, NULL,
                                                 &IID_ID3D12GraphicsCommandList, (void **)&G.list),
               "CreateCommandList"))
        return 0;
    ID3D12GraphicsCommandList_Close(G.list);
    if (!check(f, ID3D12Device_CreateFence(G.dev, 0, D3D12_FENCE_FLAG_NONE, &IID_ID3D12Fence, (void **)&G.fence),
               "CreateFence"))
        return 0;
    G.event = CreateEventW(NULL, FALSE, FALSE, NULL);
    return 1;
}

/* The highest shader model of the D3D12 device: D3D12_FEATURE_SHADER_MODEL (7) asked from 6.8 down to
   6.0, then 5.1; the first S_OK answer is the device's (it lowers HighestShaderModel to what it has). */
static void query_shader_model(void) {
    static const UINT asked[] = {0x68, 0x67, 0x66, 0x65, 0x64, 0x63, 0x62, 0x61, 0x60, 0x51};
    for (size_t i = 0; i < sizeof asked / sizeof asked[0]; i++) {
        struct { UINT HighestShaderModel; } sm = {asked[i]};
        if (SUCCEEDED(ID3D12Device_CheckFeatureSupport(G.dev, (D3D12_FEATURE)7, &sm, sizeof sm))) {
            G.shader_model = sm.HighestShaderModel;
            return;
        }
    }
}

static int create_d3d12(Fail *f) {
    double t0 = now_ms();
    IDXGIAdapter1 *adapter = NULL;
    if (!pick_adapter(&adapter, f))
        return 0;
    HRESULT hr = D3D12CreateDevice((IUnknown *)adapter, D3D_FEATURE_LEVEL_11_0, &IID_ID3D12Device, (void **)&G.dev);
    IDXGIAdapter1_Release(adapter);
    if (!check(f, hr, "D3D12CreateDevice") || !create_queue(f))
        return 0;
    G.heap_inc = ID3D12Device_GetDescriptorHandleIncrementSize(G.dev, D3D12_DESCRIPTOR_HEAP_TYPE_CBV_SRV_UAV);
    query_shader_model();
    G.t_d3d12 = now_ms() - t0;
    return 1;
}

static void query_support(void) {
    static const DML_FEATURE_LEVEL levels[] = {
        DML_FEATURE_LEVEL_1_0, DML_FEATURE_LEVEL_2_0, DML_FEATURE_LEVEL_2_1, DML_FEATURE_LEVEL_3_0,
        DML_FEATURE_LEVEL_3_1, DML_FEATURE_LEVEL_4_0, DML_FEATURE_LEVEL_4_1, DML_FEATURE_LEVEL_5_0,
        DML_FEATURE_LEVEL_5_1, DML_FEATURE_LEVEL_5_2, DML_FEATURE_LEVEL_6_0, DML_FEATURE_LEVEL_6_1,
        DML_FEATURE_LEVEL_6_2, DML_FEATURE_LEVEL_6_3, DML_FEATURE_LEVEL_6_4};
    DML_FEATURE_QUERY_FEATURE_LEVELS q = {sizeof levels / sizeof levels[0], levels};
    DML_FEATURE_DATA_FEATURE_LEVELS d = {0};
    if (SUCCEEDED(G.dml->lpVtbl->CheckFeatureSupport(G.dml, DML_FEATURE_FEATURE_LEVELS, sizeof q, &q, sizeof d, &d)))
        G.max_level = d.MaxSupportedFeatureLevel;
    for (size_t i = 0; i < N_DTYPES; i++) {
        DML_FEATURE_QUERY_TENSOR_DATA_TYPE_SUPPORT tq = {DTYPES[i].type};
        DML_FEATURE_DATA_TENSOR_DATA_TYPE_SUPPORT td = {0};
        HRESULT hr = G.dml->lpVtbl->CheckFeatureSupport(G.dml, DML_FEATURE_TENSOR_DATA_TYPE_SUPPORT,
                                                        sizeof tq, &tq, sizeof td, &td);
        G.dtype_ok[i] = SUCCEEDED(hr) && td.IsSupported;
    }
}

static int create_dml(const char *dll, Fail *f) {
    double t0 = now_ms();
    HMODULE mod = LoadLibraryA(dll);
    if (!mod)
        return fail(f, "LoadLibrary", HRESULT_FROM_WIN32(GetLastError()), "cannot load %s", dll);
    GetModuleFileNameA(mod, G.dll_path, sizeof G.dll_path);
    PFN_DMLCreateDevice1 create1 = (PFN_DMLCreateDevice1)(void *)GetProcAddress(mod, "DMLCreateDevice1");
    PFN_DMLCreateDevice create = (PFN_DMLCreateDevice)(void *)GetProcAddress(mod, "DMLCreateDevice");
    HRESULT hr;
    if (create1)
        hr = create1(G.dev, DML_CREATE_DEVICE_FLAG_NONE, DML_FEATURE_LEVEL_1_0, &ODB_IID_IDMLDevice, (void **)&G.dml);
    else if (create)
        hr = create(G.dev, DML_CREATE_DEVICE_FLAG_NONE, &ODB_IID_IDMLDevice, (void **)&G.dml);
    else
        return fail(f, "GetProcAddress", E_FAIL, "%s exports no DMLCreateDevice", dll);
    if (!check(f, hr, "DMLCreateDevice"))
        return 0;
    if (!check(f, G.dml->lpVtbl->CreateCommandRecorder(G.dml, &ODB_IID_IDMLCommandRecorder, (void **)&G.recorder),
               "CreateCommandRecorder"))
        return 0;
    query_support();
    G.t_dml = now_ms() - t0;
    return 1;
}

static void print_info(FILE *o) {
    fprintf(o, "@@odb {\"ready\":true,\"adapter\":");
    json_str(o, G.adapter);
    fprintf(o, ",\"vendor_id\":\"0x%04X\",\"device_id\":\"0x%04X\",\"dml_dll\":", G.vendor_id, G.device_id);
    json_str(o, G.dll_path);
    if (G.shader_model)
        fprintf(o, ",\"shader_model\":\"%u.%u\"", G.shader_model >> 4, G.shader_model & 0xF);
    fprintf(o, ",\"max_feature_level\":\"%u.%u\",\"dtypes\":{", G.max_level >> 12, (G.max_level >> 8) & 0xF);
    for (size_t i = 0; i < N_DTYPES; i++)
        fprintf(o, "%s\"%s\":%s", i ? "," : "", DTYPES[i].name, G.dtype_ok[i] ? "true" : "false");
    fprintf(o, "},\"timings_ms\":{\"d3d12_device\":%.3f,\"dml_device\":%.3f}}\n", G.t_d3d12, G.t_dml);
    fflush(o);
}

/* ============================================================================================ */
/* Buffers                                                                                       */
/* ============================================================================================ */

static HRESULT make_buffer(D3D12_HEAP_TYPE heap, UINT64 size, D3D12_RESOURCE_FLAGS flags,
                           D3D12_RESOURCE_STATES state, ID3D12Resource **out) {
    D3D12_HEAP_PROPERTIES hp = {heap, D3D12_CPU_PAGE_PROPERTY_UNKNOWN, D3D12_MEMORY_POOL_UNKNOWN, 1, 1};
    D3D12_RESOURCE_DESC rd = {D3D12_RESOURCE_DIMENSION_BUFFER, 0, size, 1, 1, 1, DXGI_FORMAT_UNKNOWN, {1, 0},
                              D3D12_TEXTURE_LAYOUT_ROW_MAJOR, flags};
    return ID3D12Device_CreateCommittedResource(G.dev, &hp, D3D12_HEAP_FLAG_NONE, &rd, state, NULL,
                                                &IID_ID3D12Resource, (void **)out);
}

static void release_arena(void) {
    if (G.upload)
        ID3D12Resource_Release(G.upload);
    if (G.readback)
        ID3D12Resource_Release(G.readback);
    if (G.arena)
        ID3D12Resource_Release(G.arena);
    G.upload = G.readback = G.arena = NULL;
    G.upload_ptr = NULL;
    G.arena_size = 0;
}

static int ensure_arena(UINT64 need, Fail *f) {
    if (need <= G.arena_size)
        return 1;
    if (need > MAX_ARENA)
        return fail(f, "Allocate", E_OUTOFMEMORY, "tensors need more than 2 GiB%s", NULL);
    release_arena();
    UINT64 size = 1 << 20;
    while (size < need)
        size *= 2;
    if (!check(f, make_buffer(D3D12_HEAP_TYPE_DEFAULT, size, D3D12_RESOURCE_FLAG_ALLOW_UNORDERED_ACCESS,
                              D3D12_RESOURCE_STATE_COMMON, &G.arena), "CreateCommittedResource") ||
        !check(f, make_buffer(D3D12_HEAP_TYPE_UPLOAD, size, D3D12_RESOURCE_FLAG_NONE,
                              D3D12_RESOURCE_STATE_GENERIC_READ, &G.upload), "CreateCommittedResource") ||
        !check(f, make_buffer(D3D12_HEAP_TYPE_READBACK, size, D3D12_RESOURCE_FLAG_NONE,
                              D3D12_RESOURCE_STATE_COPY_DEST, &G.readback), "CreateCommittedResource")) {
        release_arena();
        return 0;
    }
    D3D12_RANGE none = {0, 0};
    if (!check(f, ID3D12Resource_Map(G.upload, 0, &none, (void **)&G.upload_ptr), "Map")) {
        release_arena();
        return 0;
    }
    G.arena_size = size;
    G.arena_state = D3D12_RESOURCE_STATE_COMMON;
    return 1;
}

static int ensure_heap(UINT need, Fail *f) {
    if (need <= G.heap_size)
        return 1;
    if (G.heap)
        ID3D12DescriptorHeap_Release(G.heap);
    G.heap = NULL;
    G.heap_size = 0;
    UINT size = 256;
    while (size < need)
        size *= 2;
    D3D12_DESCRIPTOR_HEAP_DESC hd = {D3D12_DESCRIPTOR_HEAP_TYPE_CBV_SRV_UAV, size,
                                     D3D12_DESCRIPTOR_HEAP_FLAG_SHADER_VISIBLE, 0};
    if (!check(f, ID3D12Device_CreateDescriptorHeap(G.dev, &hd, &IID_ID3D12DescriptorHeap, (void **)&G.heap),
               "CreateDescriptorHeap"))
        return 0;
    G.heap_size = size;
    return 1;
}

/* Room for 2 * n timestamps and the readback buffer they are resolved into. */
static int ensure_queries(UINT n, Fail *f) {
    UINT need = 2 * n;
    if (need <= G.query_count)
        return 1;
    if (G.queries)
        ID3D12QueryHeap_Release(G.queries);
    if (G.query_readback)
        ID3D12Resource_Release(G.query_readback);
    G.queries = NULL;
    G.query_readback = NULL;
    G.query_count = 0;
    UINT size = 256;
    while (size < need)
        size *= 2;
    D3D12_QUERY_HEAP_DESC qd = {D3D12_QUERY_HEAP_TYPE_TIMESTAMP, size, 0};
    if (!check(f, ID3D12Device_CreateQueryHeap(G.dev, &qd, &IID_ID3D12QueryHeap, (void **)&G.queries),
               "CreateQueryHeap") ||
        !check(f, make_buffer(D3D12_HEAP_TYPE_READBACK, (UINT64)size * 8, D3D12_RESOURCE_FLAG_NONE,
                              D3D12_RESOURCE_STATE_COPY_DEST, &G.query_readback), "CreateCommittedResource"))
        return 0;
    if (!G.timestamp_frequency &&
        !check(f, ID3D12CommandQueue_GetTimestampFrequency(G.queue, &G.timestamp_frequency),
               "GetTimestampFrequency"))
        return 0;
    G.query_count = size;
    return 1;
}

/* ============================================================================================ */
/* Requests                                                                                      */
/* ============================================================================================ */

/* "run <id> <type> <Name>=<kind>:<value> ..." (the leading "run" consumed): <type> is the
 * DML_OPERATOR_TYPE value, then come the members of the operator's DML_*_OPERATOR_DESC in
 * directml.h order, as the bench writes them from the operator's declaration of its struct
 * (ops/_struct.py). Each member is packed where a C compiler puts it on x64 (natural alignment:
 * at the next multiple of its alignment), so any operator desc is built the same way:
 *
 *   in:<DTYPE>:<sizes>     const DML_TENSOR_DESC *, a buffer tensor bound to the next input slot
 *   out:<DTYPE>:<sizes>    const DML_TENSOR_DESC *, bound to the next output slot
 *   in:null / out:null     an optional tensor left out: a null pointer, its slot bound to nothing
 *   u:<n>   i:<n>          UINT, INT
 *   f:<x>                  FLOAT
 *   b:<0|1>                BOOL
 *   e:<n>                  a member of an enum type (4 bytes), by its value in directml.h
 *   ua:<n,...>  ia:<n,...> const UINT * / const INT *: a pointer to the array
 *   s2:<w>,<h>             DML_SIZE_2D
 *   p:null                 any other pointer member left out (e.g. an identity's ScaleBias)
 *
 * Names serve the error messages only. Tensor data: r<id>_in<slot>.bin, r<id>_out<slot>.bin. */

#define MAXF 32            /* members of an operator desc */
#define DESC_BYTES 512     /* room for the packed desc */

typedef struct {
    DML_TENSOR_DATA_TYPE dtype;
    Dims dims;
    UINT64 bytes;          /* exact data size */
    UINT64 offset;         /* in the arena */
    DML_BUFFER_TENSOR_DESC buf;
    DML_TENSOR_DESC desc;
} Tensor;

typedef struct {
    char name[48];
    char kind[4];
    UINT offset, size;
    UINT index;            /* tensors: the slot; arrays: the index in OpSpec.arrays */
} Member;

typedef struct {
    int id;
    Tensor in[MAXT], out[MAXT];
    UINT n_in, n_out;
    BOOL in_used[MAXT], out_used[MAXT];   /* FALSE: an optional tensor the descriptor leaves out */
    Dims arrays[MAXF];                    /* what the array members point to */
    UINT n_arrays;
    Member members[MAXF];
    UINT n_members;
    UINT64 desc[DESC_BYTES / 8];          /* the packed DML_*_OPERATOR_DESC */
    UINT desc_size, desc_align;
    DML_OPERATOR_DESC op;
} OpSpec;

static int parse_dims(const char *s, Dims *d) {
    d->n = 0;
    memset(d->v, 0, sizeof d->v);
    while (*s) {
        char *end;
        unsigned long long v = strtoull(s, &end, 10);
        if (end == s || d->n >= MAXD || v > 0xFFFFFFFFull)
            return 0;
        d->v[d->n++] = (UINT)v;
        s = end;
        if (*s == ',')
            s++;
        else if (*s)
            return 0;
    }
    return 1;
}

/* A comma-separated list of INTs, kept as their bit patterns. */
static int parse_ints(const char *s, Dims *d) {
    d->n = 0;
    memset(d->v, 0, sizeof d->v);
    while (*s) {
        char *end;
        long long v = strtoll(s, &end, 10);
        if (end == s || d->n >= MAXD || v < -0x80000000ll || v > 0x7FFFFFFFll)
            return 0;
        d->v[d->n++] = (UINT)(INT)v;
        s = end;
        if (*s == ',')
            s++;
        else if (*s)
            return 0;
    }
    return 1;
}

static int parse_int(const char *v, long long lo, long long hi, long long *out) {
    char *end;
    long long x = strtoll(v, &end, 10);
    if (end == v || *end || x < lo || x > hi)
        return 0;
    *out = x;
    return 1;
}

static int parse_bool(const char *v, BOOL *out) {
    if (!strcmp(v, "1") || !_stricmp(v, "true")) { *out = TRUE; return 1; }
    if (!strcmp(v, "0") || !_stricmp(v, "false")) { *out = FALSE; return 1; }
    return 0;
}

/* The next member: its place in the packed desc (NULL when the desc is full). */
static BYTE *place(OpSpec *s, const char *name, const char *kind, UINT size, UINT align, UINT index) {
    UINT off = (UINT)align_up(s->desc_size, align);
    if (s->n_members >= MAXF || off + size > DESC_BYTES)
        return NULL;
    Member *m = &s->members[s->n_members++];
    snprintf(m->name, sizeof m->name, "%s", name);
    snprintf(m->kind, sizeof m->kind, "%s", kind);
    m->offset = off;
    m->size = size;
    m->index = index;
    s->desc_size = off + size;
    if (align > s->desc_align)
        s->desc_align = align;
    return (BYTE *)s->desc + off;
}

static int put(OpSpec *s, const char *name, const char *kind, const void *value, UINT size, UINT align, UINT index) {
    BYTE *at = place(s, name, kind, size, align, index);
    if (at)
        memcpy(at, value, size);
    return at != NULL;
}

/* A tensor member: its slot's data type and sizes (the tensor desc is made once all are read). */
static int parse_tensor(OpSpec *s, const char *name, const char *kind, const char *v) {
    int input = !strcmp(kind, "in");
    UINT *n = input ? &s->n_in : &s->n_out;
    if (*n >= MAXT)
        return 0;
    UINT slot = (*n)++;
    Tensor *t = input ? &s->in[slot] : &s->out[slot];
    const DML_TENSOR_DESC *ptr = NULL;
    if (strcmp(v, "null")) {
        char dtype[40];
        const char *colon = strchr(v, ':');
        if (!colon || (size_t)(colon - v) >= sizeof dtype)
            return 0;
        memcpy(dtype, v, (size_t)(colon - v));
        dtype[colon - v] = 0;
        t->dtype = dtype_of(dtype);
        if (t->dtype == DML_TENSOR_DATA_TYPE_UNKNOWN || !parse_dims(colon + 1, &t->dims) || !t->dims.n)
            return 0;
        (input ? s->in_used : s->out_used)[slot] = TRUE;
        ptr = &t->desc;
    }
    return put(s, name, kind, &ptr, sizeof ptr, sizeof ptr, slot);
}

static int parse_member(OpSpec *s, const char *name, const char *kind, const char *v) {
    long long x;
    if (!strcmp(kind, "in") || !strcmp(kind, "out"))
        return parse_tensor(s, name, kind, v);
    if (!strcmp(kind, "u")) {
        UINT u;
        return parse_int(v, 0, 0xFFFFFFFFll, &x) && (u = (UINT)x, put(s, name, kind, &u, 4, 4, 0));
    }
    if (!strcmp(kind, "i") || !strcmp(kind, "e")) {
        INT i;
        return parse_int(v, -0x80000000ll, 0x7FFFFFFFll, &x) && (i = (INT)x, put(s, name, kind, &i, 4, 4, 0));
    }
    if (!strcmp(kind, "f")) {
        char *end;
        FLOAT fl = (FLOAT)strtod(v, &end);
        return *v && !*end && put(s, name, kind, &fl, 4, 4, 0);
    }
    if (!strcmp(kind, "b")) {
        BOOL b;
        return parse_bool(v, &b) && put(s, name, kind, &b, 4, 4, 0);
    }
    if (!strcmp(kind, "ua") || !strcmp(kind, "ia")) {
        if (s->n_arrays >= MAXF)
            return 0;
        UINT k = s->n_arrays++;
        Dims *a = &s->arrays[k];
        const UINT *ptr = a->v;
        return (kind[0] == 'u' ? parse_dims(v, a) : parse_ints(v, a)) && put(s, name, kind, &ptr, sizeof ptr, sizeof ptr, k);
    }
    if (!strcmp(kind, "p")) {
        const void *ptr = NULL;
        return !strcmp(v, "null") && put(s, name, kind, &ptr, sizeof ptr, sizeof ptr, 0);
    }
    if (!strcmp(kind, "s2")) {
        Dims d;
        DML_SIZE_2D size;
        if (!parse_dims(v, &d) || d.n != 2)
            return 0;
        size.Width = d.v[0];
        size.Height = d.v[1];
        return put(s, name, kind, &size, sizeof size, 4, 0);
    }
    return 0;
}

/* "<id> <type> Name=kind:value ..." -> the spec with its desc packed; Parse failures only. */
static int parse_request(char *rest, OpSpec *s, Fail *f) {
    memset(s, 0, sizeof *s);
    s->desc_align = 1;
    char *tok = strtok(rest, " \t\r\n");
    if (!tok)
        return fail(f, "Parse", E_INVALIDARG, "missing request id%s", NULL);
    s->id = atoi(tok);
    tok = strtok(NULL, " \t\r\n");
    long long type;
    if (!tok || !parse_int(tok, 1, 0x7FFFFFFFll, &type))
        return fail(f, "Parse", E_INVALIDARG, "missing or bad DML_OPERATOR_TYPE value%s", NULL);
    s->op.Type = (DML_OPERATOR_TYPE)type;
    s->op.Desc = s->desc;
    while ((tok = strtok(NULL, " \t\r\n"))) {
        char *eq = strchr(tok, '=');
        if (!eq)
            return fail(f, "Parse", E_INVALIDARG, "field without '=': %s", tok);
        *eq = 0;
        char *colon = strchr(eq + 1, ':');
        if (colon)
            *colon = 0;
        if (!colon || !parse_member(s, tok, eq + 1, colon + 1))
            return fail(f, "Parse", E_INVALIDARG, "bad field or value: %s", tok);
    }
    if (!s->n_in || !s->n_out)
        return fail(f, "Parse", E_INVALIDARG, "an operator desc needs input and output tensors%s", NULL);
    return 1;
}

/* ---- tensors -------------------------------------------------------------------------------- */

static int init_tensor(Tensor *t, Fail *f) {
    UINT64 n = 1;
    for (UINT i = 0; i < t->dims.n; i++)
        n *= t->dims.v[i];
    t->bytes = n * dtype_size(t->dtype);
    if (t->bytes > MAX_ARENA)
        return fail(f, "Allocate", E_OUTOFMEMORY, "tensor larger than 2 GiB%s", NULL);
    t->buf.DataType = t->dtype;
    t->buf.Flags = DML_TENSOR_FLAG_NONE;
    t->buf.DimensionCount = t->dims.n;
    t->buf.Sizes = t->dims.v;
    t->buf.Strides = NULL;
    t->buf.TotalTensorSizeInBytes = align_up(t->bytes, 4);
    t->buf.GuaranteedBaseOffsetAlignment = 0;
    t->desc.Type = DML_TENSOR_TYPE_BUFFER;
    t->desc.Desc = &t->buf;
    return 1;
}

/* The buffer tensor desc of every tensor the packed desc points to. */
static int build_tensors(OpSpec *s, Fail *f) {
    for (UINT i = 0; i < s->n_in; i++)
        if (s->in_used[i] && !init_tensor(&s->in[i], f))
            return 0;
    for (UINT i = 0; i < s->n_out; i++)
        if (s->out_used[i] && !init_tensor(&s->out[i], f))
            return 0;
    return 1;
}

/* "debug pack <id> <type> ...": the desc a run request would pass to CreateOperator, read back
   member by member through the packed bytes (offset, size, and what DirectML would find there). */
static void echo_pack(char *rest) {
    static OpSpec s;
    Fail f;
    memset(&f, 0, sizeof f);
    FILE *o = stdout;
    if (!parse_request(rest, &s, &f) || !build_tensors(&s, &f)) {
        fprintf(o, "@@odb {\"id\":%d,\"ok\":false,\"stage\":", s.id);
        json_str(o, f.stage);
        fprintf(o, ",\"error\":");
        json_str(o, f.msg);
        fprintf(o, "}\n");
        fflush(o);
        return;
    }
    fprintf(o, "@@odb {\"id\":%d,\"ok\":true,\"type\":%u,\"size\":%u,\"members\":[", s.id, (UINT)s.op.Type,
            (UINT)align_up(s.desc_size, s.desc_align));
    for (UINT k = 0; k < s.n_members; k++) {
        Member *m = &s.members[k];
        const BYTE *at = (const BYTE *)s.desc + m->offset;
        char text[512] = "";
        size_t len = 0;
#define ECHO(...) (len += (size_t)snprintf(text + len, len < sizeof text ? sizeof text - len : 0, __VA_ARGS__))
        if (!strcmp(m->kind, "in") || !strcmp(m->kind, "out")) {
            const DML_TENSOR_DESC *t;
            memcpy(&t, at, sizeof t);
            int input = m->kind[0] == 'i';
            UINT n = input ? s.n_in : s.n_out;
            const Tensor *base = input ? s.in : s.out;
            if (!t)
                ECHO("null");
            for (UINT i = 0; t && i < n; i++) {
                if (t != &base[i].desc)
                    continue;
                const DML_BUFFER_TENSOR_DESC *b = (const DML_BUFFER_TENSOR_DESC *)t->Desc;
                for (size_t d = 0; d < N_DTYPES; d++)
                    if (DTYPES[d].type == b->DataType)
                        ECHO("%s%u:%s:", input ? "in" : "out", i, DTYPES[d].name);
                for (UINT j = 0; j < b->DimensionCount; j++)
                    ECHO("%s%u", j ? "," : "", b->Sizes[j]);
                ECHO(":%llu", (unsigned long long)b->TotalTensorSizeInBytes);
            }
        } else if (!strcmp(m->kind, "u")) {
            UINT v;
            memcpy(&v, at, 4);
            ECHO("%u", v);
        } else if (!strcmp(m->kind, "i") || !strcmp(m->kind, "e") || !strcmp(m->kind, "b")) {
            INT v;
            memcpy(&v, at, 4);
            ECHO("%d", v);
        } else if (!strcmp(m->kind, "f")) {
            FLOAT v;
            memcpy(&v, at, 4);
            ECHO("%.9g", (double)v);
        } else if (!strcmp(m->kind, "ua") || !strcmp(m->kind, "ia")) {
            const UINT *p;
            memcpy(&p, at, sizeof p);
            for (UINT j = 0; j < s.arrays[m->index].n; j++) {
                if (m->kind[0] == 'u')
                    ECHO("%s%u", j ? "," : "", p[j]);
                else
                    ECHO("%s%d", j ? "," : "", (INT)p[j]);
            }
        } else if (!strcmp(m->kind, "s2")) {
            DML_SIZE_2D v;
            memcpy(&v, at, sizeof v);
            ECHO("%u,%u", v.Width, v.Height);
        }
#undef ECHO
        fprintf(o, "%s[", k ? "," : "");
        json_str(o, m->name);
        fprintf(o, ",\"%s\",%u,%u,", m->kind, m->offset, m->size);
        json_str(o, text);
        fprintf(o, "]");
    }
    fprintf(o, "]}\n");
    fflush(o);
}

/* ============================================================================================ */
/* Running one operator                                                                          */
/* ============================================================================================ */

typedef struct {
    IDMLOperator *op;
    IDMLCompiledOperator *compiled;
    IDMLOperatorInitializer *init;
    IDMLBindingTable *init_table, *exec_table;
    DML_BINDING_PROPERTIES exec_props, init_props;
    UINT64 temp_off, persist_off, end_in, end_out, end_all, temp_size;
    double t_create, t_compile, t_init, t_execute, t_io;
    UINT warmup, repeats;  /* timed requests: untimed and timed dispatches (0 repeats: a plain run) */
} Run;

static double g_gpu_ms[MAX_REPEATS];   /* GPU time of each timed dispatch of the last request */

static void release_run(Run *x) {
    if (x->exec_table) x->exec_table->lpVtbl->Release(x->exec_table);
    if (x->init_table) x->init_table->lpVtbl->Release(x->init_table);
    if (x->init) x->init->lpVtbl->Release(x->init);
    if (x->compiled) x->compiled->lpVtbl->Release(x->compiled);
    if (x->op) x->op->lpVtbl->Release(x->op);
}

static int create_objects(OpSpec *s, Run *x, Fail *f) {
    double t0 = now_ms();
    HRESULT hr = G.dml->lpVtbl->CreateOperator(G.dml, &s->op, &ODB_IID_IDMLOperator, (void **)&x->op);
    double t1 = now_ms();
    x->t_create = t1 - t0;
    if (!check(f, hr, "CreateOperator"))
        return 0;
    hr = G.dml->lpVtbl->CompileOperator(G.dml, x->op, DML_EXECUTION_FLAG_NONE, &ODB_IID_IDMLCompiledOperator,
                                        (void **)&x->compiled);
    double t2 = now_ms();
    x->t_compile = t2 - t1;
    if (!check(f, hr, "CompileOperator"))
        return 0;
    hr = G.dml->lpVtbl->CreateOperatorInitializer(G.dml, 1, &x->compiled, &ODB_IID_IDMLOperatorInitializer,
                                                  (void **)&x->init);
    x->t_init = now_ms() - t2;
    if (!check(f, hr, "CreateOperatorInitializer"))
        return 0;
    x->compiled->lpVtbl->GetBindingProperties(x->compiled, &x->exec_props);
    x->init->lpVtbl->GetBindingProperties(x->init, &x->init_props);
    return 1;
}

/* Arena layout: inputs, outputs, temporary, persistent; every region 256-byte aligned. */
static void layout(OpSpec *s, Run *x) {
    UINT64 off = 0;
    for (UINT i = 0; i < s->n_in; i++) {
        if (!s->in_used[i])
            continue;
        s->in[i].offset = off;
        off += align_up(s->in[i].buf.TotalTensorSizeInBytes, ALIGN);
    }
    x->end_in = off;
    for (UINT i = 0; i < s->n_out; i++) {
        if (!s->out_used[i])
            continue;
        s->out[i].offset = off;
        off += align_up(s->out[i].buf.TotalTensorSizeInBytes, ALIGN);
    }
    x->end_out = off;
    x->temp_size = max(x->exec_props.TemporaryResourceSize, x->init_props.TemporaryResourceSize);
    x->temp_off = off;
    off += align_up(x->temp_size, ALIGN);
    x->persist_off = off;
    off += align_up(x->exec_props.PersistentResourceSize, ALIGN);
    x->end_all = max(off, ALIGN);
}

static int read_inputs(OpSpec *s, Run *x, Fail *f) {
    for (UINT i = 0; i < s->n_in; i++) {
        if (!s->in_used[i])
            continue;
        char path[MAX_PATH * 2 + 32];
        snprintf(path, sizeof path, "%s\\r%d_in%u.bin", G.workdir, s->id, i);
        FILE *fp = fopen(path, "rb");
        if (!fp)
            return fail(f, "ReadInput", HRESULT_FROM_WIN32(ERROR_FILE_NOT_FOUND), "cannot open %s", path);
        size_t got = fread(G.upload_ptr + s->in[i].offset, 1, (size_t)s->in[i].bytes, fp);
        int extra = fgetc(fp) != EOF;
        fclose(fp);
        if (got != s->in[i].bytes || extra)
            return fail(f, "ReadInput", E_INVALIDARG, "input file size does not match the tensor: %s", path);
    }
    memset(G.upload_ptr + x->end_in, SENTINEL, (size_t)(x->end_out - x->end_in));
    return 1;
}

static int make_table(IDMLDispatchable *disp, UINT first, UINT count, IDMLBindingTable **out, Fail *f) {
    D3D12_CPU_DESCRIPTOR_HANDLE cpu;
    D3D12_GPU_DESCRIPTOR_HANDLE gpu;
    G.heap->lpVtbl->GetCPUDescriptorHandleForHeapStart(G.heap, &cpu);   /* aggregate return: */
    G.heap->lpVtbl->GetGPUDescriptorHandleForHeapStart(G.heap, &gpu);   /* explicit out slot */
    DML_BINDING_TABLE_DESC td = {disp, {cpu.ptr + (SIZE_T)first * G.heap_inc},
                                 {gpu.ptr + (UINT64)first * G.heap_inc}, count};
    return check(f, G.dml->lpVtbl->CreateBindingTable(G.dml, &td, &ODB_IID_IDMLBindingTable, (void **)out),
                 "CreateBindingTable");
}

static DML_BUFFER_BINDING arena_binding(UINT64 offset, UINT64 size) {
    DML_BUFFER_BINDING b = {G.arena, offset, size};
    return b;
}

static void bind_init(Run *x) {
    DML_BUFFER_BINDING tb = arena_binding(x->temp_off, x->init_props.TemporaryResourceSize);
    DML_BUFFER_BINDING pb = arena_binding(x->persist_off, x->exec_props.PersistentResourceSize);
    DML_BINDING_DESC t = {DML_BINDING_TYPE_BUFFER, &tb}, p = {DML_BINDING_TYPE_BUFFER, &pb};
    if (x->init_props.TemporaryResourceSize)
        x->init_table->lpVtbl->BindTemporaryResource(x->init_table, &t);
    if (x->exec_props.PersistentResourceSize)
        x->init_table->lpVtbl->BindOutputs(x->init_table, 1, &p);
}

static void bind_exec(OpSpec *s, Run *x) {
    DML_BUFFER_BINDING bb[2 * MAXT];
    DML_BINDING_DESC in[MAXT], out[MAXT];
    for (UINT i = 0; i < s->n_in; i++) {
        bb[i] = arena_binding(s->in[i].offset, s->in[i].buf.TotalTensorSizeInBytes);
        in[i].Type = s->in_used[i] ? DML_BINDING_TYPE_BUFFER : DML_BINDING_TYPE_NONE;
        in[i].Desc = s->in_used[i] ? &bb[i] : NULL;
    }
    for (UINT i = 0; i < s->n_out; i++) {
        bb[MAXT + i] = arena_binding(s->out[i].offset, s->out[i].buf.TotalTensorSizeInBytes);
        out[i].Type = s->out_used[i] ? DML_BINDING_TYPE_BUFFER : DML_BINDING_TYPE_NONE;
        out[i].Desc = s->out_used[i] ? &bb[MAXT + i] : NULL;
    }
    x->exec_table->lpVtbl->BindInputs(x->exec_table, s->n_in, in);
    x->exec_table->lpVtbl->BindOutputs(x->exec_table, s->n_out, out);
    DML_BUFFER_BINDING tb = arena_binding(x->temp_off, x->exec_props.TemporaryResourceSize);
    DML_BUFFER_BINDING pb = arena_binding(x->persist_off, x->exec_props.PersistentResourceSize);
    DML_BINDING_DESC t = {DML_BINDING_TYPE_BUFFER, &tb}, p = {DML_BINDING_TYPE_BUFFER, &pb};
    if (x->exec_props.TemporaryResourceSize)
        x->exec_table->lpVtbl->BindTemporaryResource(x->exec_table, &t);
    if (x->exec_props.PersistentResourceSize)
        x->exec_table->lpVtbl->BindPersistentResource(x->exec_table, &p);
}

static void transition(D3D12_RESOURCE_STATES to) {
    D3D12_RESOURCE_BARRIER b;
    memset(&b, 0, sizeof b);
    b.Type = D3D12_RESOURCE_BARRIER_TYPE_TRANSITION;
    b.Transition.pResource = G.arena;
    b.Transition.Subresource = D3D12_RESOURCE_BARRIER_ALL_SUBRESOURCES;
    b.Transition.StateBefore = G.arena_state;
    b.Transition.StateAfter = to;
    ID3D12GraphicsCommandList_ResourceBarrier(G.list, 1, &b);
    G.arena_state = to;
}

static void uav_barrier(void) {
    D3D12_RESOURCE_BARRIER b;
    memset(&b, 0, sizeof b);
    b.Type = D3D12_RESOURCE_BARRIER_TYPE_UAV;
    b.UAV.pResource = G.arena;
    ID3D12GraphicsCommandList_ResourceBarrier(G.list, 1, &b);
}

/* One timed dispatch: a timestamp when the work before it has finished, the dispatch, a UAV
   barrier (its writes done), a timestamp. Timestamp k*2 and k*2+1 bracket the k-th. */
static void timestamp(UINT index) {
    ID3D12GraphicsCommandList_EndQuery(G.list, G.queries, D3D12_QUERY_TYPE_TIMESTAMP, index);
}

/* Upload, initializer, the operator (once; or <warmup> untimed and <repeats> timed dispatches),
   outputs to the readback buffer, and the timestamps resolved into theirs. */
static void record(Run *x) {
    if (G.arena_state != D3D12_RESOURCE_STATE_COPY_DEST)
        transition(D3D12_RESOURCE_STATE_COPY_DEST);
    ID3D12GraphicsCommandList_CopyBufferRegion(G.list, G.arena, 0, G.upload, 0, x->end_out);
    transition(D3D12_RESOURCE_STATE_UNORDERED_ACCESS);
    ID3D12GraphicsCommandList_SetDescriptorHeaps(G.list, 1, &G.heap);
    G.recorder->lpVtbl->RecordDispatch(G.recorder, (ID3D12CommandList *)G.list, (IDMLDispatchable *)x->init,
                                       x->init_table);
    uav_barrier();
    UINT untimed = x->repeats ? x->warmup : 1;
    for (UINT k = 0; k < untimed; k++) {
        G.recorder->lpVtbl->RecordDispatch(G.recorder, (ID3D12CommandList *)G.list,
                                           (IDMLDispatchable *)x->compiled, x->exec_table);
        uav_barrier();
    }
    for (UINT k = 0; k < x->repeats; k++) {
        timestamp(2 * k);
        G.recorder->lpVtbl->RecordDispatch(G.recorder, (ID3D12CommandList *)G.list,
                                           (IDMLDispatchable *)x->compiled, x->exec_table);
        uav_barrier();
        timestamp(2 * k + 1);
    }
    if (x->repeats)
        ID3D12GraphicsCommandList_ResolveQueryData(G.list, G.queries, D3D12_QUERY_TYPE_TIMESTAMP, 0, 2 * x->repeats,
                                                   G.query_readback, 0);
    transition(D3D12_RESOURCE_STATE_COPY_SOURCE);
    ID3D12GraphicsCommandList_CopyBufferRegion(G.list, G.readback, x->end_in, G.arena, x->end_in,
                                               x->end_out - x->end_in);
}

static int submit_and_wait(Fail *f) {
    if (!check(f, ID3D12GraphicsCommandList_Close(G.list), "ID3D12GraphicsCommandList::Close"))
        return 0;
    ID3D12CommandList *lists[] = {(ID3D12CommandList *)G.list};
    ID3D12CommandQueue_ExecuteCommandLists(G.queue, 1, lists);
    G.fence_value++;
    if (!check(f, ID3D12CommandQueue_Signal(G.queue, G.fence, G.fence_value), "ID3D12CommandQueue::Signal"))
        return 0;
    if (ID3D12Fence_GetCompletedValue(G.fence) < G.fence_value) {
        ID3D12Fence_SetEventOnCompletion(G.fence, G.fence_value, G.event);
        WaitForSingleObject(G.event, INFINITE);
    }
    HRESULT removed = ID3D12Device_GetDeviceRemovedReason(G.dev);
    if (FAILED(removed)) {
        G.fatal = 1;
        return fail(f, "ExecuteCommandLists", removed, "device removed after the dispatch%s", NULL);
    }
    return 1;
}

/* The GPU time of the n timed dispatches (timestamps resolved into query_readback), in ms. */
static int read_timestamps(UINT n, Fail *f) {
    UINT64 *ticks = NULL;
    D3D12_RANGE range = {0, (SIZE_T)n * 16};
    if (!check(f, ID3D12Resource_Map(G.query_readback, 0, &range, (void **)&ticks), "Map"))
        return 0;
    for (UINT k = 0; k < n; k++)
        g_gpu_ms[k] = 1000.0 * (double)(ticks[2 * k + 1] - ticks[2 * k]) / (double)G.timestamp_frequency;
    D3D12_RANGE none = {0, 0};
    ID3D12Resource_Unmap(G.query_readback, 0, &none);
    return 1;
}

static int execute(OpSpec *s, Run *x, Fail *f) {
    UINT n_init = max(1u, x->init_props.RequiredDescriptorCount);
    UINT n_exec = max(1u, x->exec_props.RequiredDescriptorCount);
    if (!ensure_arena(x->end_all, f) || !ensure_heap(n_init + n_exec, f) ||
        (x->repeats && !ensure_queries(x->repeats, f)))
        return 0;
    if (!make_table((IDMLDispatchable *)x->init, 0, n_init, &x->init_table, f) ||
        !make_table((IDMLDispatchable *)x->compiled, n_init, n_exec, &x->exec_table, f))
        return 0;
    bind_init(x);
    bind_exec(s, x);
    if (!check(f, ID3D12CommandAllocator_Reset(G.alloc), "ID3D12CommandAllocator::Reset") ||
        !check(f, ID3D12GraphicsCommandList_Reset(G.list, G.alloc, NULL), "ID3D12GraphicsCommandList::Reset"))
        return 0;
    D3D12_RESOURCE_STATES before = G.arena_state;
    double t0 = now_ms();
    record(x);
    int ok = submit_and_wait(f);
    if (!ok)
        G.arena_state = before;   /* nothing ran (or the device is gone) */
    x->t_execute = now_ms() - t0;
    return ok && (!x->repeats || read_timestamps(x->repeats, f));
}

static int write_outputs(OpSpec *s, Run *x, Fail *f) {
    BYTE *data = NULL;
    D3D12_RANGE range = {(SIZE_T)x->end_in, (SIZE_T)x->end_out};
    if (!check(f, ID3D12Resource_Map(G.readback, 0, &range, (void **)&data), "Map"))
        return 0;
    int ok = 1;
    for (UINT i = 0; i < s->n_out && ok; i++) {
        if (!s->out_used[i])
            continue;
        char path[MAX_PATH * 2 + 32];
        snprintf(path, sizeof path, "%s\\r%d_out%u.bin", G.workdir, s->id, i);
        FILE *fp = fopen(path, "wb");
        ok = fp && fwrite(data + s->out[i].offset, 1, (size_t)s->out[i].bytes, fp) == s->out[i].bytes;
        if (fp)
            ok = (fclose(fp) == 0) && ok;
        if (!ok)
            fail(f, "WriteOutput", E_FAIL, "cannot write %s", path);
    }
    D3D12_RANGE none = {0, 0};
    ID3D12Resource_Unmap(G.readback, 0, &none);
    return ok;
}

/* ,"gpu":{...}: the timestamp frequency and the GPU time of each timed dispatch. */
static void gpu_times(FILE *o, UINT warmup, UINT repeats) {
    fprintf(o, ",\"gpu\":{\"timestamp_frequency\":%llu,\"warmup\":%u,\"ms\":[",
            (unsigned long long)G.timestamp_frequency, warmup);
    for (UINT k = 0; k < repeats; k++)
        fprintf(o, "%s%.6f", k ? "," : "", g_gpu_ms[k]);
    fprintf(o, "]}");
}

static void reply(int id, Fail *f, OpSpec *s, Run *x) {
    FILE *o = stdout;
    fprintf(o, "@@odb {\"id\":%d,\"ok\":%s,\"stage\":", id, f->stage ? "false" : "true");
    json_str(o, f->stage ? f->stage : "done");
    if (f->stage) {
        fprintf(o, ",\"hr\":\"0x%08lX\",\"hr_name\":\"%s\",\"error\":", (unsigned long)f->hr, hr_name(f->hr));
        json_str(o, f->msg);
    }
    fprintf(o, ",\"outputs\":[");
    for (UINT i = 0; s && i < s->n_out; i++)
        fprintf(o, "%s%s", i ? "," : "", (!f->stage && s->out_used[i]) ? "true" : "false");
    fprintf(o, "],\"binding\":{\"descriptors\":%u,\"temporary\":%llu,\"persistent\":%llu,"
               "\"init_descriptors\":%u,\"init_temporary\":%llu}",
            x->exec_props.RequiredDescriptorCount, (unsigned long long)x->exec_props.TemporaryResourceSize,
            (unsigned long long)x->exec_props.PersistentResourceSize, x->init_props.RequiredDescriptorCount,
            (unsigned long long)x->init_props.TemporaryResourceSize);
    fprintf(o, ",\"timings_ms\":{\"create\":%.3f,\"compile\":%.3f,\"initializer\":%.3f,\"execute\":%.3f,"
               "\"io\":%.3f}", x->t_create, x->t_compile, x->t_init, x->t_execute, x->t_io);
    if (x->repeats && !f->stage)
        gpu_times(o, x->warmup, x->repeats);
    fprintf(o, "}\n");
    fflush(o);
}

static void handle_run(char *rest, UINT warmup, UINT repeats) {
    static OpSpec s;
    Run x;
    Fail f;
    memset(&x, 0, sizeof x);
    memset(&f, 0, sizeof f);
    x.warmup = warmup;
    x.repeats = repeats;
    int ok = parse_request(rest, &s, &f) && build_tensors(&s, &f) && create_objects(&s, &x, &f);
    if (ok) {
        layout(&s, &x);
        double t0 = now_ms();
        ok = ensure_arena(x.end_all, &f) && read_inputs(&s, &x, &f);
        x.t_io = now_ms() - t0;
        ok = ok && execute(&s, &x, &f);
        t0 = now_ms();
        ok = ok && write_outputs(&s, &x, &f);
        x.t_io += now_ms() - t0;
    }
    reply(s.id, &f, (f.stage && !strcmp(f.stage, "Parse")) ? NULL : &s, &x);
    release_run(&x);
}

/* A default-heap buffer of at least n bytes for the copy yardstick to write, in COPY_DEST. */
static int ensure_copy_dst(UINT64 n, Fail *f) {
    if (n <= G.copy_dst_size)
        return 1;
    if (G.copy_dst)
        ID3D12Resource_Release(G.copy_dst);
    G.copy_dst = NULL;
    G.copy_dst_size = 0;
    if (!check(f, make_buffer(D3D12_HEAP_TYPE_DEFAULT, n, D3D12_RESOURCE_FLAG_NONE, D3D12_RESOURCE_STATE_COPY_DEST,
                              &G.copy_dst), "CreateCommittedResource"))
        return 0;
    G.copy_dst_size = n;
    return 1;
}

/* "copy <bytes> <warmup> <repeats>": CopyBufferRegion of the arena's first <bytes> (device memory)
   into another default-heap buffer, <warmup> times untimed then <repeats> times between two
   timestamps each, as record() times a dispatch. The copy engine's bandwidth on this device: bytes
   read + written over the median. */
static void handle_copy(char *rest) {
    Fail f;
    memset(&f, 0, sizeof f);
    long long bytes = 0, warmup = 0, repeats = 0;
    char *a = strtok(rest, " \t\r\n"), *b = strtok(NULL, " \t\r\n"), *c = strtok(NULL, " \t\r\n");
    int ok = a && b && c && parse_int(a, 4, (long long)(MAX_ARENA / 2), &bytes) && parse_int(b, 0, 1000, &warmup) &&
             parse_int(c, 1, MAX_REPEATS, &repeats);
    if (!ok)
        fail(&f, "Parse", E_INVALIDARG, "copy <bytes> <warmup> <repeats>%s", NULL);
    UINT64 n = align_up((UINT64)bytes, ALIGN);
    ok = ok && ensure_arena(n, &f) && ensure_copy_dst(n, &f) && ensure_queries((UINT)repeats, &f) &&
         check(&f, ID3D12CommandAllocator_Reset(G.alloc), "ID3D12CommandAllocator::Reset") &&
         check(&f, ID3D12GraphicsCommandList_Reset(G.list, G.alloc, NULL), "ID3D12GraphicsCommandList::Reset");
    double t0 = now_ms();
    if (ok) {
        if (G.arena_state != D3D12_RESOURCE_STATE_COPY_DEST)
            transition(D3D12_RESOURCE_STATE_COPY_DEST);
        ID3D12GraphicsCommandList_CopyBufferRegion(G.list, G.arena, 0, G.upload, 0, n);   /* defined data */
        transition(D3D12_RESOURCE_STATE_COPY_SOURCE);
        for (long long k = 0; k < warmup + repeats; k++) {
            if (k >= warmup)
                timestamp(2 * (UINT)(k - warmup));
            ID3D12GraphicsCommandList_CopyBufferRegion(G.list, G.copy_dst, 0, G.arena, 0, n);
            if (k >= warmup)
                timestamp(2 * (UINT)(k - warmup) + 1);
        }
        ID3D12GraphicsCommandList_ResolveQueryData(G.list, G.queries, D3D12_QUERY_TYPE_TIMESTAMP, 0,
                                                   2 * (UINT)repeats, G.query_readback, 0);
        D3D12_RESOURCE_STATES before = G.arena_state;
        ok = submit_and_wait(&f);
        if (!ok)
            G.arena_state = before;
        ok = ok && read_timestamps((UINT)repeats, &f);
    }
    FILE *o = stdout;
    fprintf(o, "@@odb {\"copy\":%llu,\"ok\":%s,\"stage\":", (unsigned long long)bytes, f.stage ? "false" : "true");
    json_str(o, f.stage ? f.stage : "done");
    if (f.stage) {
        fprintf(o, ",\"hr\":\"0x%08lX\",\"hr_name\":\"%s\",\"error\":", (unsigned long)f.hr, hr_name(f.hr));
        json_str(o, f.msg);
    }
    fprintf(o, ",\"timings_ms\":{\"execute\":%.3f}", now_ms() - t0);
    if (!f.stage)
        gpu_times(o, (UINT)warmup, (UINT)repeats);
    fprintf(o, "}\n");
    fflush(o);
}

/* ============================================================================================ */
/* Main loop                                                                                     */
/* ============================================================================================ */

static LONG WINAPI on_crash(EXCEPTION_POINTERS *e) {
    fprintf(stderr, "@@odb-crash unhandled exception 0x%08lX at %p\n",
            (unsigned long)e->ExceptionRecord->ExceptionCode, e->ExceptionRecord->ExceptionAddress);
    fflush(stderr);
    TerminateProcess(GetCurrentProcess(), 3);
    return EXCEPTION_EXECUTE_HANDLER;
}

static void startup_failure(Fail *f) {
    printf("@@odb {\"ready\":false,\"stage\":");
    json_str(stdout, f->stage);
    printf(",\"hr\":\"0x%08lX\",\"hr_name\":\"%s\",\"error\":", (unsigned long)f->hr, hr_name(f->hr));
    json_str(stdout, f->msg);
    printf("}\n");
    fflush(stdout);
}

static void parse_args(int argc, char **argv, const char **dll) {
    GetModuleFileNameA(NULL, G.workdir, sizeof G.workdir);
    char *slash = strrchr(G.workdir, '\\');
    if (slash)
        *slash = 0;
    static char default_dll[MAX_PATH * 2 + 16];
    snprintf(default_dll, sizeof default_dll, "%s\\DirectML.dll", G.workdir);
    *dll = default_dll;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--dll"))
            *dll = argv[i + 1];
        else if (!strcmp(argv[i], "--workdir"))
            snprintf(G.workdir, sizeof G.workdir, "%s", argv[i + 1]);
    }
}

static int handle_line(char *line) {
    char *cmd = strtok(line, " \t\r\n");
    char *rest = cmd ? cmd + strlen(cmd) + 1 : NULL;
    if (!cmd)
        return 1;
    if (!strcmp(cmd, "run")) {
        handle_run(rest, 0, 0);
        return !G.fatal;
    }
    if (!strcmp(cmd, "time")) {
        long long warmup = -1, repeats = -1;
        char *w = strtok(rest, " \t\r\n"), *r = strtok(NULL, " \t\r\n");
        char *tail = r ? r + strlen(r) + 1 : NULL;
        if (!w || !r || !parse_int(w, 0, 1000, &warmup) || !parse_int(r, 1, MAX_REPEATS, &repeats)) {
            printf("@@odb {\"ok\":false,\"stage\":\"Parse\",\"error\":\"time <warmup 0-1000> <repeats 1-%d> <id> ...\"}\n",
                   MAX_REPEATS);
            fflush(stdout);
            return 1;
        }
        handle_run(tail, (UINT)warmup, (UINT)repeats);
        return !G.fatal;
    }
    if (!strcmp(cmd, "copy")) {
        handle_copy(rest);
        return !G.fatal;
    }
    if (!strcmp(cmd, "info")) {
        print_info(stdout);
        return 1;
    }
    if (!strcmp(cmd, "debug")) {
        char *what = strtok(rest, " \t\r\n");
        if (what && !strcmp(what, "crash"))
            *(volatile int *)0 = 1;
        if (what && !strcmp(what, "hang"))
            Sleep(INFINITE);
        if (what && !strcmp(what, "pack"))
            echo_pack(what + strlen(what) + 1);
        return 1;
    }
    if (!strcmp(cmd, "quit"))
        return 0;
    printf("@@odb {\"ok\":false,\"stage\":\"Parse\",\"error\":\"unknown command\"}\n");
    fflush(stdout);
    return 1;
}

int main(int argc, char **argv) {
    static char line[1 << 16];
    const char *dll;
    Fail f;
    memset(&f, 0, sizeof f);
    SetUnhandledExceptionFilter(on_crash);
    SetErrorMode(SEM_FAILCRITICALERRORS | SEM_NOGPFAULTERRORBOX);
    QueryPerformanceFrequency(&g_freq);
    parse_args(argc, argv, &dll);
    if (!create_d3d12(&f) || !create_dml(dll, &f)) {
        startup_failure(&f);
        return 2;
    }
    print_info(stdout);
    while (fgets(line, sizeof line, stdin)) {
        if (strlen(line) == sizeof line - 1 && line[sizeof line - 2] != '\n') {
            printf("@@odb {\"ok\":false,\"stage\":\"Parse\",\"error\":\"request line too long\"}\n");
            fflush(stdout);
            int c;
            while ((c = getchar()) != EOF && c != '\n')
                ;
            continue;
        }
        if (!handle_line(line))
            break;
    }
    return G.fatal ? 3 : 0;
}
