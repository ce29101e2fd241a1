// Which CUPTI activity record struct each kind is read as, chosen by CUPTI_API_VERSION.
// CUPTI fills buffers with the record versions of the libcupti the program runs with, which is
// the one of the toolkit it was built with; the collector refuses a different major version.
#pragma once

#include <cupti.h>

// CUPTI_API_VERSION: 19 = CUDA 12.0 ... 26 = 12.8, 27/28 = 12.9; from CUDA 13.0 it is xxyyzz
// (130000 = 13.0). See cupti_version.h.
#if !defined(CUPTI_API_VERSION) || CUPTI_API_VERSION < 19
#error "dagsgd's CUPTI collector needs CUPTI from CUDA 12.0 or newer"
#endif

namespace dagsgd::runtime::cupti_version {

#if CUPTI_API_VERSION >= 130000
// CUDA 13 generates CUpti_ActivityKernel10 (Kernel9 moved to cupti_activity_deprecated.h).
using Kernel = CUpti_ActivityKernel10;
inline constexpr const char* kKernelName = "CUpti_ActivityKernel10";
#else
// CUDA 12.0 replaced Kernel8 with Kernel9 (cluster occupancy fields).
using Kernel = CUpti_ActivityKernel9;
inline constexpr const char* kKernelName = "CUpti_ActivityKernel9";
#endif

#if CUPTI_API_VERSION >= 26
// "Structure deprecated in CUDA 12.8: Refer to CUpti_ActivityMemcpy6 / Synchronization2".
using Memcpy = CUpti_ActivityMemcpy6;
using Sync = CUpti_ActivitySynchronization2;
inline constexpr const char* kMemcpyName = "CUpti_ActivityMemcpy6";
inline constexpr const char* kSyncName = "CUpti_ActivitySynchronization2";
#else
using Memcpy = CUpti_ActivityMemcpy5;
using Sync = CUpti_ActivitySynchronization;
inline constexpr const char* kMemcpyName = "CUpti_ActivityMemcpy5";
inline constexpr const char* kSyncName = "CUpti_ActivitySynchronization";
#endif

// Memset4 since CUDA 11.6; API and external-correlation records are unversioned.
using Memset = CUpti_ActivityMemset4;
using Api = CUpti_ActivityAPI;
using External = CUpti_ActivityExternalCorrelation;

}  // namespace dagsgd::runtime::cupti_version
