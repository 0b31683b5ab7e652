// Umbrella header: everything a kiln user needs.
#pragma once

#include "kiln/array.h"
#include "kiln/device.h"
#include "kiln/dtype.h"
#include "kiln/ops.h"
#include "kiln/transforms.h"
#include "kiln/utils.h"
#if __has_include("kiln/random.h")
#include "kiln/random.h"
#endif
#if __has_include("kiln/fast.h")
#include "kiln/fast.h"
#endif
#include "kiln/io.h"
#include "kiln/fft.h"
#include "kiln/linalg.h"
#include "kiln/quantized.h"
#include "kiln/graph_dot.h"
#include "kiln/distributed/distributed.h"
