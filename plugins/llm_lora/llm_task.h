#pragma once
// The `llm.lora` task (alias `llm`): LoRA fine-tuning of a Llama-family model on alpaca /
// sharegpt chat data through the engine's loop. Artifacts: a PEFT adapter folder
// (`artifacts/adapter/`) and, with export_merged=true, merged weights in Hugging Face layout
// (`artifacts/merged/`).
#include <string>

namespace crucible::llm {

inline constexpr const char* kLlmTaskId = "llm.lora";

// Keeps the static registration in executables that link the plugin as a plain static library.
void ensure_llm_task_registered();

}  // namespace crucible::llm
