/*
 * nodlclose: LD_PRELOAD shim for the memory checks. Open MPI unloads its
 * components (dlclose) in MPI_Finalize, before LeakSanitizer and valgrind
 * print their reports at exit; the stacks of those reports then show
 * "<unknown module>" and cannot be told apart (ours or Open MPI's). With
 * this shim dlclose does nothing, so every component stays mapped and every
 * frame keeps its file and line.
 */
int dlclose(void *handle)
{
    (void) handle;
    return 0;
}
