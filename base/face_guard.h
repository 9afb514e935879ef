/*
 * face_guard.h — the faces' boundary, kept by the compiler. A face
 * (plugin/face/, compiled with -DOCBG_FACE by the Makefile) words what an
 * operation of ops/ops.h returns; it never sees the engine, the registry,
 * the store, the runners or the host. Each header of those includes this
 * one first, so a face that includes one does not compile.
 */
#ifdef OCBG_FACE
#error "a face includes ops/ops.h (and base/, model/task.h, text/): call an operation, word its snapshot"
#endif
