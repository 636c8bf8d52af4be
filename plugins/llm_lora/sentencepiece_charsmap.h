#pragma once
// The precompiled character maps of a tokenizer.model, checked before libsentencepiece loads
// it. The library trusts a map: it walks the map's double-array trie without bounds checks
// and keeps at most 32 matches of one prefix on the stack without counting, so a crafted map
// would make it read past the file or the stack. This check reads the model proto's
// normalizer_spec and denormalizer_spec (protobuf_reader.h) and walks every trie the way the
// library will, refusing with an InputError what the library would read out of bounds. It
// checks nothing else: the library checks the rest of the model itself.
#include <string>
#include <string_view>

namespace crucible::llm {

// Throws InputError (naming `where`) when a character map of the model is unsafe to load.
void check_sentencepiece_charsmaps(std::string_view model_bytes, const std::string& where);

// One map: <trie size, 4 bytes LE><double-array units, 4 bytes LE each><NUL-ended strings>.
void check_precompiled_charsmap(std::string_view blob, const std::string& where);

}  // namespace crucible::llm
