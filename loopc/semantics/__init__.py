"""What ops compute, written once: ONNX's definitions and TensorRT's documented layer formulas.

A lower layer than the passes, the backend and the simulator: each reads the same formula here (the
backend to decide whether a TensorRT layer computes ONNX's numbers, the simulator to compute that layer,
the passes to build an op in the graph) instead of importing another's copy. Nothing here imports them.
"""
