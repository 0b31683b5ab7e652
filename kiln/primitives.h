// All primitives, by family. Extensions include kiln/primitive.h for the base class only.
#pragma once

#include "kiln/primitive.h"
#include "kiln/primitives_binary.h"
#include "kiln/primitives_layout.h"
#include "kiln/primitives_unary.h"
