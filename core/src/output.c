/* output.c: placeholder until the atomic output writer lands (see output.h). */
#include "output.h"
