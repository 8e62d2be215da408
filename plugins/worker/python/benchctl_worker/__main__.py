"""python3 -m benchctl_worker ENGINE: serves the worker protocol for ENGINE
(transformers, deepspeed, ctranslate2, openvino) on stdin/stdout; exits 0 after
`shutdown`."""

import sys

from . import protocol

ADAPTERS = {
    "transformers": ("hf", "TransformersEngine"),
    "deepspeed": ("ds", "DeepSpeedEngine"),
    "ctranslate2": ("ct2", "CTranslate2Engine"),
    "openvino": ("ov", "OpenVINOEngine"),
}


def main(argv):
    if len(argv) != 2 or argv[1] not in ADAPTERS:
        sys.stderr.write("usage: python3 -m benchctl_worker {%s}\n" % ",".join(ADAPTERS))
        return 2
    inp, out = protocol.protocol_streams()
    module, cls = ADAPTERS[argv[1]]
    mod = __import__("benchctl_worker." + module, fromlist=[cls])
    return protocol.serve(getattr(mod, cls)(), inp, out)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
