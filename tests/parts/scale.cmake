# Loading at scale: the streamed top graph against protobuf-c's whole-file
# unpack, on the ONNX conformance models and the generated models, and the
# loader's hand decoders of NodeProto and ValueInfoProto (src/onnx/wire.c)
# against protobuf-c, message by message and on mutants of each message.
add_test(NAME load_stream COMMAND test_ir --stream-check ${TESTDATA} ${SEAM_MODELS_DIR})
set_tests_properties(load_stream PROPERTIES LABELS "conformance;models" FIXTURES_REQUIRED models TIMEOUT 600)
