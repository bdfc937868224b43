#include "own_cupti_client.h"

#include <atomic>

#include <cupti.h>

namespace {

CUpti_SubscriberHandle g_subscriber = nullptr;
OwnCuptiClient g_client;
std::atomic<uint64_t> g_callbacks{0};

void CUPTIAPI on_callback(void*, CUpti_CallbackDomain, CUpti_CallbackId, const void* data) {
  if (static_cast<const CUpti_CallbackData*>(data)->callbackSite == CUPTI_API_EXIT) ++g_callbacks;
}

}  // namespace

void follow_own_cupti_client(bool wanted) {
  if (wanted && g_subscriber == nullptr) {
    if (cuptiSubscribe(&g_subscriber, on_callback, nullptr) != CUPTI_SUCCESS) {
      g_subscriber = nullptr;
      ++g_client.refused;
      return;
    }
    ++g_client.subscribed;
    cuptiEnableCallback(1, g_subscriber, CUPTI_CB_DOMAIN_RUNTIME_API,
                        CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000);
  } else if (!wanted && g_subscriber != nullptr) {
    cuptiUnsubscribe(g_subscriber);
    g_subscriber = nullptr;
  }
}

OwnCuptiClient own_cupti_client() {
  OwnCuptiClient client = g_client;
  client.callbacks = g_callbacks.load();
  return client;
}
