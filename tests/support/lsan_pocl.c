/* LeakSanitizer suppressions for test binaries that compile OpenCL programs: PoCL and the LLVM
 * it embeds keep compiler state for the life of the process, which LSan reports as leaks at
 * exit. Only those two libraries are exempt; leaks in xreplay's own code still fail the test. */
const char *__lsan_default_suppressions(void);
const char *__lsan_default_suppressions(void) { return "leak:libpocl.so\nleak:libLLVM\n"; }
