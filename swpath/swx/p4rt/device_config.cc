// SPDX-License-Identifier: Apache-2.0
#include "device_config.h"

#include <jansson.h>

#include <memory>

namespace swx {

std::string ParseDeviceConfig(const std::string& bytes, DeviceConfig* out) {
  json_error_t error;
  std::unique_ptr<json_t, decltype(&json_decref)> root(
      json_loadb(bytes.data(), bytes.size(), 0, &error), json_decref);
  if (!root) return std::string("not JSON: ") + error.text;
  json_t* spec = json_object_get(root.get(), "spec");
  json_t* context = json_object_get(root.get(), "context");
  if (!json_is_string(spec) || !json_is_object(context))
    return "expected {\"spec\": \"...\", \"context\": {...}} (p4src/build/pna/quicknat.swx.json)";
  out->spec.assign(json_string_value(spec), json_string_length(spec));
  char* text = json_dumps(context, JSON_COMPACT);
  if (text == nullptr) return "out of memory";
  out->context = text;
  free(text);
  return "";
}

}  // namespace swx
