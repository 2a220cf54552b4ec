/* The part of DirectML's public ABI (DirectML.h) that the direct lane uses, declared in plain C.
 *
 * MinGW ships d3d12.h but no DirectML.h and no DirectML import library: DMLCreateDevice is
 * loaded with GetProcAddress, and the interfaces are declared here as C vtables. Enum values,
 * struct layouts and vtable order follow Microsoft's DirectML.h (DML_TARGET_VERSION 0x6400).
 * Nothing here is specific to one operator: the operator descs are packed from each request.
 *
 * ABI note: IDMLDispatchable::GetBindingProperties returns a struct by value. Microsoft's x64
 * C++ ABI passes the return slot as a hidden pointer *after* `this`; the C vtable entry below
 * spells that out (as MinGW's d3d12.h does for GetCPUDescriptorHandleForHeapStart).
 */
#ifndef ODB_DML_ABI_H
#define ODB_DML_ABI_H

#include <d3d12.h>

/* ---- tensors -------------------------------------------------------------------------------- */

typedef enum DML_TENSOR_DATA_TYPE {
    DML_TENSOR_DATA_TYPE_UNKNOWN = 0,
    DML_TENSOR_DATA_TYPE_FLOAT32 = 1,
    DML_TENSOR_DATA_TYPE_FLOAT16 = 2,
    DML_TENSOR_DATA_TYPE_UINT32 = 3,
    DML_TENSOR_DATA_TYPE_UINT16 = 4,
    DML_TENSOR_DATA_TYPE_UINT8 = 5,
    DML_TENSOR_DATA_TYPE_INT32 = 6,
    DML_TENSOR_DATA_TYPE_INT16 = 7,
    DML_TENSOR_DATA_TYPE_INT8 = 8,
    DML_TENSOR_DATA_TYPE_FLOAT64 = 9,
    DML_TENSOR_DATA_TYPE_UINT64 = 10,
    DML_TENSOR_DATA_TYPE_INT64 = 11,
} DML_TENSOR_DATA_TYPE;

typedef enum DML_TENSOR_TYPE { DML_TENSOR_TYPE_INVALID = 0, DML_TENSOR_TYPE_BUFFER = 1 } DML_TENSOR_TYPE;
typedef enum DML_TENSOR_FLAGS { DML_TENSOR_FLAG_NONE = 0, DML_TENSOR_FLAG_OWNED_BY_DML = 1 } DML_TENSOR_FLAGS;

typedef struct DML_BUFFER_TENSOR_DESC {
    DML_TENSOR_DATA_TYPE DataType;
    DML_TENSOR_FLAGS Flags;
    UINT DimensionCount;
    const UINT *Sizes;
    const UINT *Strides;
    UINT64 TotalTensorSizeInBytes;
    UINT GuaranteedBaseOffsetAlignment;
} DML_BUFFER_TENSOR_DESC;

typedef struct DML_TENSOR_DESC {
    DML_TENSOR_TYPE Type;
    const void *Desc;
} DML_TENSOR_DESC;

/* ---- operators ------------------------------------------------------------------------------ */

/* Each request brings its operator's DML_OPERATOR_TYPE value and the members of its
   DML_*_OPERATOR_DESC (harness.c packs them); the numbers come from the bench's one table of
   directml.h values (onnx_dml_bench/ops/_struct.py, DIRECTML_H). */
typedef enum DML_OPERATOR_TYPE { DML_OPERATOR_INVALID = 0 } DML_OPERATOR_TYPE;

typedef struct DML_SIZE_2D { UINT Width; UINT Height; } DML_SIZE_2D;

typedef struct DML_OPERATOR_DESC {
    DML_OPERATOR_TYPE Type;
    const void *Desc;
} DML_OPERATOR_DESC;

/* ---- feature support ------------------------------------------------------------------------ */

typedef enum DML_FEATURE_LEVEL {
    DML_FEATURE_LEVEL_1_0 = 0x1000, DML_FEATURE_LEVEL_2_0 = 0x2000, DML_FEATURE_LEVEL_2_1 = 0x2100,
    DML_FEATURE_LEVEL_3_0 = 0x3000, DML_FEATURE_LEVEL_3_1 = 0x3100, DML_FEATURE_LEVEL_4_0 = 0x4000,
    DML_FEATURE_LEVEL_4_1 = 0x4100, DML_FEATURE_LEVEL_5_0 = 0x5000, DML_FEATURE_LEVEL_5_1 = 0x5100,
    DML_FEATURE_LEVEL_5_2 = 0x5200, DML_FEATURE_LEVEL_6_0 = 0x6000, DML_FEATURE_LEVEL_6_1 = 0x6100,
    DML_FEATURE_LEVEL_6_2 = 0x6200, DML_FEATURE_LEVEL_6_3 = 0x6300, DML_FEATURE_LEVEL_6_4 = 0x6400,
} DML_FEATURE_LEVEL;

typedef enum DML_FEATURE {
    DML_FEATURE_TENSOR_DATA_TYPE_SUPPORT = 0,
    DML_FEATURE_FEATURE_LEVELS = 1,
} DML_FEATURE;

typedef struct { DML_TENSOR_DATA_TYPE DataType; } DML_FEATURE_QUERY_TENSOR_DATA_TYPE_SUPPORT;
typedef struct { BOOL IsSupported; } DML_FEATURE_DATA_TENSOR_DATA_TYPE_SUPPORT;
typedef struct {
    UINT RequestedFeatureLevelCount;
    const DML_FEATURE_LEVEL *RequestedFeatureLevels;
} DML_FEATURE_QUERY_FEATURE_LEVELS;
typedef struct { DML_FEATURE_LEVEL MaxSupportedFeatureLevel; } DML_FEATURE_DATA_FEATURE_LEVELS;

/* ---- binding ---------------------------------------------------------------------------------- */

typedef enum DML_EXECUTION_FLAGS { DML_EXECUTION_FLAG_NONE = 0 } DML_EXECUTION_FLAGS;
typedef enum DML_CREATE_DEVICE_FLAGS { DML_CREATE_DEVICE_FLAG_NONE = 0 } DML_CREATE_DEVICE_FLAGS;
typedef enum DML_BINDING_TYPE {
    DML_BINDING_TYPE_NONE = 0, DML_BINDING_TYPE_BUFFER = 1, DML_BINDING_TYPE_BUFFER_ARRAY = 2,
} DML_BINDING_TYPE;

typedef struct DML_BINDING_PROPERTIES {
    UINT RequiredDescriptorCount;
    UINT64 TemporaryResourceSize;
    UINT64 PersistentResourceSize;
} DML_BINDING_PROPERTIES;

typedef struct DML_BINDING_DESC { DML_BINDING_TYPE Type; const void *Desc; } DML_BINDING_DESC;
typedef struct DML_BUFFER_BINDING { ID3D12Resource *Buffer; UINT64 Offset; UINT64 SizeInBytes; } DML_BUFFER_BINDING;

typedef struct IDMLDispatchable IDMLDispatchable;
typedef struct DML_BINDING_TABLE_DESC {
    IDMLDispatchable *Dispatchable;
    D3D12_CPU_DESCRIPTOR_HANDLE CPUDescriptorHandle;
    D3D12_GPU_DESCRIPTOR_HANDLE GPUDescriptorHandle;
    UINT SizeInDescriptors;
} DML_BINDING_TABLE_DESC;

/* ---- interfaces (C vtables, in DirectML.h order) --------------------------------------------- */

#define ODB_IUNKNOWN(T) \
    HRESULT (STDMETHODCALLTYPE *QueryInterface)(T *This, REFIID riid, void **ppv); \
    ULONG (STDMETHODCALLTYPE *AddRef)(T *This); \
    ULONG (STDMETHODCALLTYPE *Release)(T *This);
#define ODB_IDMLOBJECT(T) ODB_IUNKNOWN(T) \
    HRESULT (STDMETHODCALLTYPE *GetPrivateData)(T *This, REFGUID g, UINT *size, void *data); \
    HRESULT (STDMETHODCALLTYPE *SetPrivateData)(T *This, REFGUID g, UINT size, const void *data); \
    HRESULT (STDMETHODCALLTYPE *SetPrivateDataInterface)(T *This, REFGUID g, IUnknown *data); \
    HRESULT (STDMETHODCALLTYPE *SetName)(T *This, PCWSTR name);
#define ODB_IDMLDEVICECHILD(T) ODB_IDMLOBJECT(T) \
    HRESULT (STDMETHODCALLTYPE *GetDevice)(T *This, REFIID riid, void **ppv);
#define ODB_IDMLDISPATCHABLE(T) ODB_IDMLDEVICECHILD(T) \
    DML_BINDING_PROPERTIES *(STDMETHODCALLTYPE *GetBindingProperties)(T *This, DML_BINDING_PROPERTIES *ret);

typedef struct IDMLOperator IDMLOperator;
typedef struct IDMLCompiledOperator IDMLCompiledOperator;
typedef struct IDMLOperatorInitializer IDMLOperatorInitializer;
typedef struct IDMLBindingTable IDMLBindingTable;
typedef struct IDMLCommandRecorder IDMLCommandRecorder;
typedef struct IDMLDevice IDMLDevice;

typedef struct { ODB_IDMLDEVICECHILD(IDMLOperator) } IDMLOperatorVtbl;
struct IDMLOperator { const IDMLOperatorVtbl *lpVtbl; };

typedef struct { ODB_IDMLDISPATCHABLE(IDMLDispatchable) } IDMLDispatchableVtbl;
struct IDMLDispatchable { const IDMLDispatchableVtbl *lpVtbl; };

typedef struct { ODB_IDMLDISPATCHABLE(IDMLCompiledOperator) } IDMLCompiledOperatorVtbl;
struct IDMLCompiledOperator { const IDMLCompiledOperatorVtbl *lpVtbl; };

typedef struct {
    ODB_IDMLDISPATCHABLE(IDMLOperatorInitializer)
    HRESULT (STDMETHODCALLTYPE *Reset)(IDMLOperatorInitializer *This, UINT n, IDMLCompiledOperator *const *ops);
} IDMLOperatorInitializerVtbl;
struct IDMLOperatorInitializer { const IDMLOperatorInitializerVtbl *lpVtbl; };

typedef struct {
    ODB_IDMLDEVICECHILD(IDMLBindingTable)
    void (STDMETHODCALLTYPE *BindInputs)(IDMLBindingTable *This, UINT n, const DML_BINDING_DESC *b);
    void (STDMETHODCALLTYPE *BindOutputs)(IDMLBindingTable *This, UINT n, const DML_BINDING_DESC *b);
    void (STDMETHODCALLTYPE *BindTemporaryResource)(IDMLBindingTable *This, const DML_BINDING_DESC *b);
    void (STDMETHODCALLTYPE *BindPersistentResource)(IDMLBindingTable *This, const DML_BINDING_DESC *b);
    HRESULT (STDMETHODCALLTYPE *Reset)(IDMLBindingTable *This, const DML_BINDING_TABLE_DESC *desc);
} IDMLBindingTableVtbl;
struct IDMLBindingTable { const IDMLBindingTableVtbl *lpVtbl; };

typedef struct {
    ODB_IDMLDEVICECHILD(IDMLCommandRecorder)
    void (STDMETHODCALLTYPE *RecordDispatch)(IDMLCommandRecorder *This, ID3D12CommandList *list,
                                             IDMLDispatchable *dispatchable, IDMLBindingTable *bindings);
} IDMLCommandRecorderVtbl;
struct IDMLCommandRecorder { const IDMLCommandRecorderVtbl *lpVtbl; };

typedef struct {
    ODB_IDMLOBJECT(IDMLDevice)
    HRESULT (STDMETHODCALLTYPE *CheckFeatureSupport)(IDMLDevice *This, DML_FEATURE feature, UINT qsize,
                                                     const void *query, UINT dsize, void *data);
    HRESULT (STDMETHODCALLTYPE *CreateOperator)(IDMLDevice *This, const DML_OPERATOR_DESC *desc,
                                                REFIID riid, void **ppv);
    HRESULT (STDMETHODCALLTYPE *CompileOperator)(IDMLDevice *This, IDMLOperator *op, DML_EXECUTION_FLAGS flags,
                                                 REFIID riid, void **ppv);
    HRESULT (STDMETHODCALLTYPE *CreateOperatorInitializer)(IDMLDevice *This, UINT n,
                                                           IDMLCompiledOperator *const *ops, REFIID riid, void **ppv);
    HRESULT (STDMETHODCALLTYPE *CreateCommandRecorder)(IDMLDevice *This, REFIID riid, void **ppv);
    HRESULT (STDMETHODCALLTYPE *CreateBindingTable)(IDMLDevice *This, const DML_BINDING_TABLE_DESC *desc,
                                                    REFIID riid, void **ppv);
    HRESULT (STDMETHODCALLTYPE *Evict)(IDMLDevice *This, UINT n, void *const *objects);
    HRESULT (STDMETHODCALLTYPE *MakeResident)(IDMLDevice *This, UINT n, void *const *objects);
    HRESULT (STDMETHODCALLTYPE *GetDeviceRemovedReason)(IDMLDevice *This);
    HRESULT (STDMETHODCALLTYPE *GetParentDevice)(IDMLDevice *This, REFIID riid, void **ppv);
} IDMLDeviceVtbl;
struct IDMLDevice { const IDMLDeviceVtbl *lpVtbl; };

typedef HRESULT (WINAPI *PFN_DMLCreateDevice)(ID3D12Device *dev, DML_CREATE_DEVICE_FLAGS flags,
                                              REFIID riid, void **ppv);
typedef HRESULT (WINAPI *PFN_DMLCreateDevice1)(ID3D12Device *dev, DML_CREATE_DEVICE_FLAGS flags,
                                               DML_FEATURE_LEVEL min_level, REFIID riid, void **ppv);

/* Interface ids (DirectML.h). */
DEFINE_GUID(ODB_IID_IDMLDevice, 0x6dbd6437, 0x96fd, 0x423f, 0xa9, 0x8c, 0xae, 0x5e, 0x7c, 0x2a, 0x57, 0x3f);
DEFINE_GUID(ODB_IID_IDMLOperator, 0x26caae7a, 0x3081, 0x4633, 0x95, 0x81, 0x22, 0x6f, 0xbe, 0x57, 0x69, 0x5d);
DEFINE_GUID(ODB_IID_IDMLCompiledOperator, 0x6b15e56a, 0xbf5c, 0x4902, 0x92, 0xd8, 0xda, 0x3a, 0x65, 0x0a, 0xfe, 0xa4);
DEFINE_GUID(ODB_IID_IDMLOperatorInitializer, 0x427c1113, 0x435c, 0x469c, 0x86, 0x76, 0x4d, 0x5d, 0xd0, 0x72, 0xf8, 0x13);
DEFINE_GUID(ODB_IID_IDMLBindingTable, 0x29c687dc, 0xde74, 0x4e3b, 0xab, 0x00, 0x11, 0x68, 0xf2, 0xfc, 0x3c, 0xfc);
DEFINE_GUID(ODB_IID_IDMLCommandRecorder, 0xe6857a76, 0x2e3e, 0x4fdd, 0xbf, 0xf4, 0x5d, 0x2b, 0xa1, 0x0f, 0xb4, 0x53);

#endif /* ODB_DML_ABI_H */
