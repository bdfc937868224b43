// What the fake libcupti.so.13 offers the fake CUDA libraries beside CUPTI's own API: the
// callbacks of an API call, and the activity records of the GPU work it submits.
#pragma once

#include <cstdint>

// CUPTI's numbers for the domains and sites, without its headers (which declare the real CUDA
// APIs the fakes replace); fake_cupti.cpp checks them against CUPTI's.
enum FakeCuptiDomain { kFakeDriverApi = 1, kFakeRuntimeApi = 2 };
enum FakeCuptiSite { kFakeApiEnter = 0, kFakeApiExit = 1 };

extern "C" {

uint32_t fake_cupti_next_correlation_id();
// Calls the subscriber's callback for (domain, cbid) at `site`, if it is enabled.
void fake_cupti_api(int domain, uint32_t cbid, int site, uint32_t correlation_id,
                    const char* symbol);
// Queues a record if its kind is enabled: a kernel of `duration_ns` on the fake GPU's clock.
void fake_cupti_kernel(uint32_t correlation_id, const char* name, uint64_t duration_ns,
                       uint32_t graph_id);
void fake_cupti_memcpy(uint32_t correlation_id, uint32_t copy_kind, uint64_t bytes,
                       uint64_t duration_ns);
void fake_cupti_memset(uint32_t correlation_id, uint64_t bytes, uint64_t duration_ns);
}
