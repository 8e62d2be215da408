/* safetensors.c: placeholder; its owner fills it in. */
