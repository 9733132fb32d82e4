"""Networks behind the Perceptor contract (perceptor.py), built by name in registry.py.

Modules: darknet (Darknet cfg/weights -> PyTorch), yolo_detector (2D COCO detector on ONNX
Runtime or PyTorch), yolo_decode (YOLO heads -> boxes, NMS), lifting + lifted_perceptor
(2D -> 3D), onnx_export / onnx_runtime (export and sessions), weights (files, checksums,
downloads on request). Nothing is imported here, so `import embodied_ros.network.perceptor`
does not load PyTorch.
"""
