"""Networks behind the Perceptor contract (perceptor.py), built by name in registry.py.

Modules: detector2d (what the 2D detectors share: runtime, export, detect), image_decode (the
one decode path: resize geometry, NMS, Detections2D), darknet + yolo_detector + yolo_decode
(Yolo-Fastest), yolox_detector + onnx_module (YOLOX-Nano's ONNX, also read into PyTorch),
ncnn + nanodet_detector (NanoDet-Plus's ncnn files read into PyTorch), lifting + lifted_perceptor
(2D -> 3D), perceptron* (the Embodied Perceptron: graph, decode, targets, loss, Perceptor),
onnx_export (export + TensorRT check), weights (files, checksums, downloads on request).
The backends that run the graphs (TensorRT, ONNX Runtime, PyTorch) live in embodied_ros/runtime/.
Nothing is imported here, so `import embodied_ros.network.perceptor` does not load PyTorch.
"""
