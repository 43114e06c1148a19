# seam's layers, lowest first (docs/architecture.md): each is an object
# library whose include root holds only what it may use, the folders (or
# single headers) under src/ named after USES, so an #include that runs the
# wrong way (a lower layer reaching up) does not compile. Files of one
# folder include each other by plain name ("mask.h"). The public headers
# (include/) are open to every layer. tests/checks/check_layers.py reads
# this file as well, and checks every #include under src/ against it.
#
#   seam_layer(NAME SOURCES <globs under src/> USES <paths under src/>)
#
# The backend interface (`backend`) is the table wrappers, the node views
# and the host kernel contract; the backends (cpu, dnnl, rules, plugin) sit
# on it, and so do the partitioner and the runtime. The kernel contract is
# declared there and implemented by the runtime (runtime/kernel.c): the one
# deliberate inversion, named in docs/architecture.md.
set(SEAM_BACKEND_IF backends/backend.h backends/kernel.h backends/view.h)

seam_layer(core      SOURCES core/*.c            USES core)
seam_layer(ir        SOURCES ir/*.c              USES core ir)
seam_layer(onnx      SOURCES onnx/*.c            USES core ir onnx)
seam_layer(ops       SOURCES ops/*.c             USES core ir ops)
seam_layer(backend   SOURCES backends/*.c        USES core ir ops ${SEAM_BACKEND_IF})
seam_layer(cpu       SOURCES backends/cpu/*.c    USES core ir ops ${SEAM_BACKEND_IF} backends/cpu)
seam_layer(dnnl      SOURCES backends/dnnl/*.c   USES core ir ops ${SEAM_BACKEND_IF} backends/dnnl)
seam_layer(rules     SOURCES backends/rules/*.c  USES core ir ops ${SEAM_BACKEND_IF} backends/rules)
seam_layer(plugin    SOURCES backends/plugin/*.c USES core ir ops ${SEAM_BACKEND_IF} backends/plugin)
seam_layer(partition SOURCES partition/*.c       USES core ir ops ${SEAM_BACKEND_IF} partition)
seam_layer(runtime   SOURCES runtime/*.c         USES core ir onnx ops ${SEAM_BACKEND_IF} backends/cpu/kernels.h
                                                      partition runtime)
# A staged model's pipeline over MPI (include/seam_mpi.h); built with
# SEAM_WITH_MPI alone.
seam_layer(mpi       SOURCES mpi/*.c             USES core ir onnx ops ${SEAM_BACKEND_IF} partition runtime mpi)
# Pictures of plans and runs (graphviz): a library of its own, which
# libseam.so does not link (the CLI and the Python package do).
seam_layer(report    SOURCES report/*.c          USES core ir onnx report)

# Backend plug-ins built apart (their own CMakeLists.txt, a library of their
# own): they may include the public headers and their own folder alone.
set(SEAM_PLUGIN_FOLDERS backends/cuda)
