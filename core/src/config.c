/* config.c: placeholder until the config parser lands (see config.h). */
#include "config.h"
