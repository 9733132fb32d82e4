"""Networks behind the Perceptor contract (perceptor.py), built by name in registry.py.

Modules: darknet (Darknet cfg/weights -> PyTorch), yolo_detector (2D COCO detector on ONNX
Runtime or PyTorch), yolo_decode (YOLO heads -> boxes, NMS), lifting + lifted_perceptor
(2D -> 3D), perceptron* (the Embodied Perceptron: graph, decode, targets, loss, Perceptor),
onnx_export (export + TensorRT check), weights (files, checksums, downloads on request).
The backends that run the graphs (TensorRT, ONNX Runtime, PyTorch) live in embodied_ros/runtime/.
Nothing is imported here, so `import embodied_ros.network.perceptor` does not load PyTorch.
"""
