/*
 * Test-only stand-in for bcryptprimitives.dll, which Wine 8 does not have.
 *
 * Rust's standard library for x86_64-pc-windows-gnu imports
 * bcryptprimitives.dll!ProcessPrng for its random numbers (HashMap seeds and
 * friends), so every Rust .exe fails to start under Wine 8 with "Library
 * bcryptprimitives.dll ... not found". This DLL exports ProcessPrng backed by
 * advapi32's SystemFunction036 (RtlGenRandom), which Wine implements.
 *
 * Built by scripts/wine-lane next to the .exe files under test; never shipped.
 */
#include <windows.h>

/* ntstatus.h's STATUS_INTERNAL_ERROR (windows.h does not define it). */
#define SHIM_STATUS_INTERNAL_ERROR ((DWORD)0xC00000E5L)

/* RtlGenRandom's real export name; it takes a ULONG length, so large requests are split. */
__declspec(dllimport) BOOLEAN WINAPI SystemFunction036(PVOID buffer, ULONG length);

/* Same contract as Windows': fills the buffer and always returns TRUE. */
__declspec(dllexport) BOOL WINAPI ProcessPrng(PBYTE data, SIZE_T length)
{
    while (length > 0) {
        ULONG chunk = length > 0x10000000 ? 0x10000000 : (ULONG)length;
        if (!SystemFunction036(data, chunk)) {
            /* The Windows function cannot fail; a failing RNG here must not pass silently. */
            RaiseException(SHIM_STATUS_INTERNAL_ERROR, EXCEPTION_NONCONTINUABLE, 0, NULL);
        }
        data += chunk;
        length -= chunk;
    }
    return TRUE;
}
