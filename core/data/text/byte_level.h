#pragma once
// Bytes spelled as tokens, the two ways the tokenizers of every task do it:
// - the byte-level map of GPT-2 (used by CLIP, Llama 3, Qwen and every tokenizer.json with a
//   ByteLevel pre-tokenizer): each of the 256 bytes stands for one printable character, the
//   printable ones of Latin-1 for themselves and the others for U+0100 onwards, so any byte
//   string becomes text that a vocabulary can hold;
// - byte-fallback pieces "<0xAB>" (SentencePiece and Hugging Face BPE with byte_fallback).
// Shared by plugins/llm_lora and plugins/sd_lora, so it lives in core/data (see unicode.h).
#include <array>
#include <string>
#include <string_view>

namespace crucible::data::text {

// The 256 stand-ins, as UTF-8 (byte_symbols()[' '] is "Ġ", U+0120).
const std::array<std::string, 256>& byte_symbols();
// `bytes` spelled with the stand-ins.
std::string bytes_to_symbols(std::string_view bytes);
// The inverse: every stand-in back to its byte; other characters are kept as they are.
std::string symbols_to_bytes(std::string_view text);

// The byte of a byte-fallback piece "<0xAB>" (upper-case hex, as SentencePiece and Hugging Face
// write them), or -1 for any other text.
int parse_byte_piece(std::string_view text);
// "<0xAB>" for a byte.
std::string byte_piece_name(unsigned char byte);

}  // namespace crucible::data::text
