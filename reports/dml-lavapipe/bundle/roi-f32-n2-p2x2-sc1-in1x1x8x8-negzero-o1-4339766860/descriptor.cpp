// DML_ROI_POOLING_OPERATOR_DESC of case roi-f32-n1-p2x2-sc1-in1x1x1x2-explicit-o1-3f8dd5dccd
// DML_FEATURE_LEVEL 1.0
#include <cmath>
#include <DirectML.h>

static const UINT inputTensorSizes[4] = { 1, 1, 1, 2 };
static const DML_BUFFER_TENSOR_DESC inputTensorBuffer = {
    DML_TENSOR_DATA_TYPE_FLOAT32,  // DataType
    DML_TENSOR_FLAG_NONE,  // Flags
    4,  // DimensionCount
    inputTensorSizes,  // Sizes
    nullptr,  // Strides (packed)
    8,  // TotalTensorSizeInBytes (2 x 4 bytes, rounded up to 4)
    0,  // GuaranteedBaseOffsetAlignment
};
static const DML_TENSOR_DESC inputTensor = { DML_TENSOR_TYPE_BUFFER, &inputTensorBuffer };

static const UINT rOITensorSizes[4] = { 1, 1, 1, 5 };
static const DML_BUFFER_TENSOR_DESC rOITensorBuffer = {
    DML_TENSOR_DATA_TYPE_FLOAT32,  // DataType
    DML_TENSOR_FLAG_NONE,  // Flags
    4,  // DimensionCount
    rOITensorSizes,  // Sizes
    nullptr,  // Strides (packed)
    20,  // TotalTensorSizeInBytes (5 x 4 bytes, rounded up to 4)
    0,  // GuaranteedBaseOffsetAlignment
};
static const DML_TENSOR_DESC rOITensor = { DML_TENSOR_TYPE_BUFFER, &rOITensorBuffer };

static const UINT outputTensorSizes[4] = { 1, 1, 2, 2 };
static const DML_BUFFER_TENSOR_DESC outputTensorBuffer = {
    DML_TENSOR_DATA_TYPE_FLOAT32,  // DataType
    DML_TENSOR_FLAG_NONE,  // Flags
    4,  // DimensionCount
    outputTensorSizes,  // Sizes
    nullptr,  // Strides (packed)
    16,  // TotalTensorSizeInBytes (4 x 4 bytes, rounded up to 4)
    0,  // GuaranteedBaseOffsetAlignment
};
static const DML_TENSOR_DESC outputTensor = { DML_TENSOR_TYPE_BUFFER, &outputTensorBuffer };

static const DML_ROI_POOLING_OPERATOR_DESC opDesc = {
    &inputTensor,  // InputTensor
    &rOITensor,  // ROITensor
    &outputTensor,  // OutputTensor
    1.0f,  // SpatialScale
    DML_SIZE_2D{ 2, 2 },  // PooledSize
};

static const DML_OPERATOR_DESC operatorDesc = { DML_OPERATOR_ROI_POOLING, &opDesc };
// IDMLDevice::CreateOperator(&operatorDesc, IID_PPV_ARGS(&op));
