#include "cupti_lib/src/activity_buffers.h"

#include <atomic>
#include <cstddef>
#include <cstdlib>
#include <cstring>

#include "cupti_lib/src/cupti_api.h"
#include "cupti_lib/src/kernel_names.h"
#include "cupti_lib/src/probes.h"
#include "cupti_lib/src/quiet_log.h"

// Records are read through the oldest layouts that carry every field used here; CUDA 12's and 13's
// records share those fields' offsets, so one library reads both.
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"

namespace dormant::cupti {
namespace {

using KernelView = CUpti_ActivityKernel5;
using MemcpyView = CUpti_ActivityMemcpy5;
using MemsetView = CUpti_ActivityMemset3;

#define DORMANT_SAME_OFFSET(old_type, new_type, field) \
  static_assert(offsetof(old_type, field) == offsetof(new_type, field))
DORMANT_SAME_OFFSET(KernelView, CUpti_ActivityKernel10, start);
DORMANT_SAME_OFFSET(KernelView, CUpti_ActivityKernel10, end);
DORMANT_SAME_OFFSET(KernelView, CUpti_ActivityKernel10, deviceId);
DORMANT_SAME_OFFSET(KernelView, CUpti_ActivityKernel10, streamId);
DORMANT_SAME_OFFSET(KernelView, CUpti_ActivityKernel10, correlationId);
DORMANT_SAME_OFFSET(KernelView, CUpti_ActivityKernel10, name);
DORMANT_SAME_OFFSET(KernelView, CUpti_ActivityKernel10, graphId);
DORMANT_SAME_OFFSET(MemcpyView, CUpti_ActivityMemcpy6, copyKind);
DORMANT_SAME_OFFSET(MemcpyView, CUpti_ActivityMemcpy6, bytes);
DORMANT_SAME_OFFSET(MemcpyView, CUpti_ActivityMemcpy6, start);
DORMANT_SAME_OFFSET(MemcpyView, CUpti_ActivityMemcpy6, end);
DORMANT_SAME_OFFSET(MemcpyView, CUpti_ActivityMemcpy6, deviceId);
DORMANT_SAME_OFFSET(MemcpyView, CUpti_ActivityMemcpy6, streamId);
DORMANT_SAME_OFFSET(MemcpyView, CUpti_ActivityMemcpy6, correlationId);
DORMANT_SAME_OFFSET(MemcpyView, CUpti_ActivityMemcpy6, graphId);
DORMANT_SAME_OFFSET(MemsetView, CUpti_ActivityMemset4, bytes);
DORMANT_SAME_OFFSET(MemsetView, CUpti_ActivityMemset4, start);
DORMANT_SAME_OFFSET(MemsetView, CUpti_ActivityMemset4, end);
DORMANT_SAME_OFFSET(MemsetView, CUpti_ActivityMemset4, deviceId);
DORMANT_SAME_OFFSET(MemsetView, CUpti_ActivityMemset4, streamId);
DORMANT_SAME_OFFSET(MemsetView, CUpti_ActivityMemset4, correlationId);
DORMANT_SAME_OFFSET(MemsetView, CUpti_ActivityMemset4, graphId);
#undef DORMANT_SAME_OFFSET

std::atomic<bool> g_wanted{false};
std::atomic<int> g_held{0};

// What kernel, memcpy and memset records have alike, under the same names.
template <typename Record>
void copy_common_fields(const Record& record, dormant_cupti_activity_kind kind,
                        dormant_cupti_activity& wire) {
  wire.kind = kind;
  wire.start_ns = record.start;
  wire.end_ns = record.end;
  wire.correlation_id = record.correlationId;
  wire.device_id = record.deviceId;
  wire.stream_id = record.streamId;
  wire.graph_id = record.graphId;
}

// The wire record of a CUPTI record; false for kinds the agent does not take.
bool to_wire(const CUpti_Activity* record, dormant_cupti_activity& wire) {
  wire = {};
  switch (record->kind) {
    case CUPTI_ACTIVITY_KIND_KERNEL:
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: {
      const auto& kernel = *reinterpret_cast<const KernelView*>(record);
      copy_common_fields(kernel, DORMANT_CUPTI_KERNEL, wire);
      wire.name = reinterpret_cast<uintptr_t>(wire_kernel_name(kernel.name));
      return true;
    }
    case CUPTI_ACTIVITY_KIND_MEMCPY: {
      const auto& copy = *reinterpret_cast<const MemcpyView*>(record);
      copy_common_fields(copy, DORMANT_CUPTI_MEMCPY, wire);
      wire.bytes = copy.bytes;
      wire.copy_kind = copy.copyKind;
      return true;
    }
    case CUPTI_ACTIVITY_KIND_MEMSET: {
      const auto& set = *reinterpret_cast<const MemsetView*>(record);
      copy_common_fields(set, DORMANT_CUPTI_MEMSET, wire);
      wire.bytes = set.bytes;
      return true;
    }
    default:
      return false;
  }
}

}  // namespace

void set_buffers_wanted(bool wanted) { g_wanted.store(wanted, std::memory_order_release); }

void hand_over_dropped() {
  size_t dropped = 0;
  if (quiet() || !agent_attached() ||
      cupti().activity_get_num_dropped_records(nullptr, 0, &dropped) != CUPTI_SUCCESS ||
      dropped == 0) {
    return;
  }
  static dormant_cupti_batch batch;  // under the attachment's lock
  batch.count = 0;
  batch.dropped = dropped;
  fire_activity_probe(&batch);
}

void CUPTIAPI request_buffer(uint8_t** buffer, size_t* size, size_t* max_records) {
  *buffer = nullptr;
  *size = 0;
  *max_records = 0;  // as many as fit
  if (quiet() || !g_wanted.load(std::memory_order_acquire)) return;
  if (g_held.fetch_add(1, std::memory_order_relaxed) >= kMaxBuffersHeld) {
    g_held.fetch_sub(1, std::memory_order_relaxed);
    log_once("all activity buffers are in use: CUPTI drops records until one is returned");
    return;
  }
  *buffer = static_cast<uint8_t*>(std::aligned_alloc(8, kBufferBytes));
  if (*buffer == nullptr) {
    g_held.fetch_sub(1, std::memory_order_relaxed);
    return;
  }
  *size = kBufferBytes;
}

void CUPTIAPI complete_buffer(CUcontext context, uint32_t stream_id, uint8_t* buffer, size_t,
                              size_t valid_size) {
  if (buffer == nullptr) return;
  static thread_local dormant_cupti_batch batch;
  batch.count = 0;
  batch.dropped = 0;
  if (!quiet() && agent_attached()) {
    CUpti_Activity* record = nullptr;
    while (cupti().activity_get_next_record(buffer, valid_size, &record) == CUPTI_SUCCESS) {
      if (!to_wire(record, batch.records[batch.count])) continue;
      if (++batch.count == DORMANT_CUPTI_BATCH_RECORDS) {
        fire_activity_probe(&batch);
        batch.count = 0;
      }
    }
    size_t dropped = 0;
    if (cupti().activity_get_num_dropped_records(context, stream_id, &dropped) == CUPTI_SUCCESS) {
      batch.dropped = dropped;
    }
    if (batch.count > 0 || batch.dropped > 0) fire_activity_probe(&batch);
  }
  std::free(buffer);
  g_held.fetch_sub(1, std::memory_order_relaxed);
}

}  // namespace dormant::cupti
