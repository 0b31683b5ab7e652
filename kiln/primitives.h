// All primitives, by family. Extensions include kiln/primitive.h for the base class only.
#pragma once

#include "kiln/primitive.h"
#include "kiln/primitives_binary.h"
#include "kiln/primitives_layout.h"
#include "kiln/primitives_unary.h"
// Families added as they land (each owns its header).
#if __has_include("kiln/primitives_creation.h")
#include "kiln/primitives_creation.h"
#endif
#if __has_include("kiln/primitives_ternary.h")
#include "kiln/primitives_ternary.h"
#endif
#if __has_include("kiln/primitives_reduce.h")
#include "kiln/primitives_reduce.h"
#endif
#if __has_include("kiln/primitives_linalg.h")
#include "kiln/primitives_linalg.h"
#endif
#if __has_include("kiln/primitives_random.h")
#include "kiln/primitives_random.h"
#endif
#if __has_include("kiln/primitives_indexing.h")
#include "kiln/primitives_indexing.h"
#endif
#if __has_include("kiln/primitives_transforms.h")
#include "kiln/primitives_transforms.h"
#endif
#if __has_include("kiln/primitives_custom.h")
#include "kiln/primitives_custom.h"
#endif
#if __has_include("kiln/primitives_sort.h")
#include "kiln/primitives_sort.h"
#endif
