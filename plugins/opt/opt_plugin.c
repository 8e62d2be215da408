/* opt_plugin.c: placeholder; its owner fills it in. */
