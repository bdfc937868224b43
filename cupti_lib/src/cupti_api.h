// The CUPTI of the program's CUDA. The library links no libcupti: at initialization it takes the
// libcupti the program has loaded already (libcupti.so.13, or .so.12 as PyTorch's cu12 wheels
// bring), else the one that goes with the CUDA runtime it has loaded, else 13 then 12 from the
// library search path; so one library file serves CUDA 12 and 13 programs. What differs between
// the two it copes with elsewhere: records are read through the layouts they share
// (activity_buffers.cpp), and launch APIs a CUPTI does not know are left out (attachment.cpp).
#pragma once

#include <cupti.h>

namespace dormant::cupti {

struct CuptiApi {
  decltype(&cuptiSubscribe) subscribe = nullptr;
  // CUDA 13's: names this subscriber and learns a conflicting one's name. Null where absent.
  decltype(&cuptiSubscribe_v2) subscribe_v2 = nullptr;
  decltype(&cuptiUnsubscribe) unsubscribe = nullptr;
  decltype(&cuptiEnableCallback) enable_callback = nullptr;
  decltype(&cuptiActivityEnable) activity_enable = nullptr;
  decltype(&cuptiActivityDisable) activity_disable = nullptr;
  decltype(&cuptiActivityFlushAll) activity_flush_all = nullptr;
  decltype(&cuptiActivityRegisterCallbacks) activity_register_callbacks = nullptr;
  decltype(&cuptiActivityGetNextRecord) activity_get_next_record = nullptr;
  decltype(&cuptiActivityGetNumDroppedRecords) activity_get_num_dropped_records = nullptr;
  decltype(&cuptiGetResultString) get_result_string = nullptr;
};

// Finds and loads the program's CUPTI, once; false (having said why on stderr) when there is
// none. Before it succeeds, cupti() must not be called.
bool load_cupti();
const CuptiApi& cupti();

}  // namespace dormant::cupti
