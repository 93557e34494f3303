// SPDX-License-Identifier: Apache-2.0
// The minidump format's numbers: stream types, record sizes and the CPU and context tags the
// reader needs. Facts from Microsoft's minidumpapiset.h layouts and Breakpad's
// minidump_format.h (the Linux streams 0x4767xxxx); everything in a minidump is
// little-endian, whatever machine wrote it.
#pragma once

#include <cstdint>

namespace ehbt::minidump {

inline constexpr uint32_t kSignature = 0x504d444d;  // "MDMP" read as a little-endian word
inline constexpr uint16_t kVersion = 0xa793;        // low half of Version (MINIDUMP_VERSION)

// MINIDUMP_HEADER and MINIDUMP_DIRECTORY.
inline constexpr uint32_t kHeaderSize = 32;
inline constexpr uint32_t kDirectoryEntrySize = 12;  // StreamType, DataSize, Rva

// Stream types.
inline constexpr uint32_t kThreadListStream = 3;
inline constexpr uint32_t kModuleListStream = 4;
inline constexpr uint32_t kMemoryListStream = 5;
inline constexpr uint32_t kExceptionStream = 6;
inline constexpr uint32_t kSystemInfoStream = 7;
inline constexpr uint32_t kMemory64ListStream = 9;
inline constexpr uint32_t kMiscInfoStream = 15;
// Breakpad's Linux streams (Crashpad and LLDB write some of them too).
inline constexpr uint32_t kLinuxCpuInfo = 0x47670003;
inline constexpr uint32_t kLinuxProcStatus = 0x47670004;
inline constexpr uint32_t kLinuxCmdLine = 0x47670006;
inline constexpr uint32_t kLinuxEnviron = 0x47670007;
inline constexpr uint32_t kLinuxAuxv = 0x47670008;
inline constexpr uint32_t kLinuxMaps = 0x47670009;
inline constexpr uint32_t kLinuxDsoDebug = 0x4767000a;

// Record sizes.
inline constexpr uint32_t kThreadSize = 48;              // MINIDUMP_THREAD
inline constexpr uint32_t kModuleSize = 108;             // MINIDUMP_MODULE
inline constexpr uint32_t kMemoryDescriptorSize = 16;    // start u64, DataSize u32, Rva u32
inline constexpr uint32_t kMemoryDescriptor64Size = 16;  // start u64, DataSize u64
inline constexpr uint32_t kExceptionStreamSize = 168;    // MINIDUMP_EXCEPTION_STREAM
inline constexpr uint32_t kSystemInfoSize = 56;          // MINIDUMP_SYSTEM_INFO
// MDRawLinkMap (Breakpad's LinuxDsoDebug entries): addr, name rva, ld; 64-bit writers.
inline constexpr uint32_t kDsoDebugHeaderSize = 40;  // version, map count, brk, ldbase, dynamic

// MINIDUMP_SYSTEM_INFO.ProcessorArchitecture.
inline constexpr uint16_t kCpuX86 = 0;
inline constexpr uint16_t kCpuArm = 5;
inline constexpr uint16_t kCpuAmd64 = 9;
inline constexpr uint16_t kCpuArm64 = 12;
inline constexpr uint16_t kCpuArm64Breakpad = 0x8003;  // Breakpad's tag before Windows had one

// CodeView record signatures (the record's first word).
inline constexpr uint32_t kCvPdb70 = 0x53445352;  // "RSDS": GUID, age, PDB file name
inline constexpr uint32_t kCvElf = 0x4270454c;    // "BpEL": the ELF build-id bytes follow

}  // namespace ehbt::minidump
