// The activity buffers CUPTI fills with kernel, memcpy and memset records while an agent is
// attached. Completed buffers are turned into batches for the activity probe and freed at once;
// at most kMaxBuffersHeld are out at a time (CUPTI drops and counts what finds no buffer), and
// none is handed out while the library is dormant.
#pragma once

#include <cstddef>
#include <cstdint>

#include <cupti.h>

namespace dormant::cupti {

inline constexpr size_t kBufferBytes = 256 * 1024;
inline constexpr int kMaxBuffersHeld = 64;

void set_buffers_wanted(bool wanted);
// Passes on the records CUPTI says it dropped that no completed buffer has reported yet.
void hand_over_dropped();

void CUPTIAPI request_buffer(uint8_t** buffer, size_t* size, size_t* max_records);
void CUPTIAPI complete_buffer(CUcontext context, uint32_t stream_id, uint8_t* buffer, size_t size,
                              size_t valid_size);

}  // namespace dormant::cupti
