/* Included first in every C++ file of the GPU modules (scripts/build-gpu-modules): binds the
 * one libstdc++ symbol that GCC 12 versions above manylinux_2_34's ceiling to its older
 * version. GCC 12 added std::condition_variable::wait(unique_lock&) at GLIBCXX_3.4.30 (a
 * change to pthread cancellation); the GLIBCXX_3.4.11 one beside it in every libstdc++ since
 * GCC 4.4 waits the same way. Without this the modules need GLIBCXX_3.4.30, which RHEL 9's
 * libstdc++ (GCC 11) lacks. */
#if defined(__cplusplus) && defined(__x86_64__)
__asm__(".symver _ZNSt18condition_variable4waitERSt11unique_lockISt5mutexE,"
        "_ZNSt18condition_variable4waitERSt11unique_lockISt5mutexE@GLIBCXX_3.4.11");
#endif
