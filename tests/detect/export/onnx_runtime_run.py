"""Runs an exported ONNX model in ONNX Runtime for the C++ export tests (test tooling only).

    python onnx_runtime_run.py MODEL INPUTS OUTPUTS

Checks MODEL with the ONNX checker (full check, shape inference included), then feeds every
tensor of the safetensors file INPUTS to the model's first input (cast to its element type) and
writes the first output, as float32, under the same name into the safetensors file OUTPUTS.
Exit status 0 on success; a checker or runtime error is printed and exits 1.
"""
import json
import struct
import sys

import numpy as np
import onnx
import onnxruntime

DTYPES = {"F32": np.float32, "F16": np.float16}


def read_safetensors(path):
    data = open(path, "rb").read()
    (size,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8 : 8 + size])
    tensors = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        begin, end = info["data_offsets"]
        raw = data[8 + size + begin : 8 + size + end]
        tensors[name] = np.frombuffer(raw, dtype=DTYPES[info["dtype"]]).reshape(info["shape"])
    return tensors


def write_safetensors(path, tensors):
    header, blobs, offset = {}, [], 0
    for name, array in tensors.items():
        raw = np.ascontiguousarray(array, dtype=np.float32).tobytes()
        header[name] = {"dtype": "F32", "shape": list(array.shape),
                        "data_offsets": [offset, offset + len(raw)]}
        blobs.append(raw)
        offset += len(raw)
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + b"".join(blobs))


def main():
    model_path, inputs_path, outputs_path = sys.argv[1:4]
    model = onnx.load(model_path)
    onnx.checker.check_model(model, full_check=True)
    session = onnxruntime.InferenceSession(model_path, providers=["CPUExecutionProvider"])
    first = session.get_inputs()[0]
    wanted = np.float16 if first.type == "tensor(float16)" else np.float32
    outputs = {}
    for name, array in read_safetensors(inputs_path).items():
        outputs[name] = session.run(None, {first.name: array.astype(wanted)})[0]
    write_safetensors(outputs_path, outputs)
    print(f"onnx {onnx.__version__} checker: ok; onnxruntime {onnxruntime.__version__}: "
          f"{len(outputs)} inputs run")


if __name__ == "__main__":
    try:
        main()
    except Exception as error:  # the C++ test shows this text
        print(f"{type(error).__name__}: {error}", file=sys.stderr)
        sys.exit(1)
