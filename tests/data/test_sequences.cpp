// Variable-length token sequences: loading (JSONL, text bytes, safetensors),
// dynamic padding, collate functions, length-grouped batches, and the loader
// features (sharding, workers, resume) over them.
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <fstream>

#include "accel/error.hpp"
#include "accel/sequence_data.hpp"
#include "formats/safetensors.hpp"

namespace {

std::string write_temp(const std::string& name, const std::string& text) {
  std::string path = ::testing::TempDir() + name;
  std::ofstream(path, std::ios::binary) << text;
  return path;
}

std::string error_of(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const accel::Error& error) {
    return error.what();
  }
  return "no error";
}

accel::ErrorCode code_of(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const accel::Error& error) {
    return error.code();
  }
  return accel::ErrorCode::Internal;
}

at::Tensor longs(std::vector<int64_t> values) { return at::tensor(values, at::kLong); }

std::vector<int64_t> as_vector(const at::Tensor& t) {
  at::Tensor c = t.contiguous();
  return {c.data_ptr<int64_t>(), c.data_ptr<int64_t>() + c.numel()};
}

accel::TokenSequences three() {  // lengths 3, 1, 2
  return accel::make_token_sequences(longs({5, 6, 7, 8, 9, 0}), longs({0, 3, 4, 6}));
}

TEST(TokenSequences, JsonlReadsIdsUnderTheKeyOrBareArrays) {
  auto path = write_temp("ids.jsonl", "{\"input_ids\": [1, 2, 3], \"x\": 1}\n\n[4]\n");
  EXPECT_NE(error_of([&] { accel::load_jsonl_sequences(path); }).find(":3: expected a JSON object"), std::string::npos);
  auto keyed = accel::load_jsonl_sequences(write_temp("k.jsonl", "{\"input_ids\": [1, 2, 3]}\n{\"input_ids\": []}\n"));
  EXPECT_EQ(keyed.lengths(), (std::vector<int64_t>{3, 0}));
  auto bare = accel::load_jsonl_sequences(write_temp("bare.jsonl", "[4, 5]\r\n[6]\n"), "");
  EXPECT_EQ(as_vector(bare.ids), (std::vector<int64_t>{4, 5, 6}));
  EXPECT_EQ(as_vector(bare.offsets), (std::vector<int64_t>{0, 2, 3}));
}

TEST(TokenSequences, JsonlLabelsPerSampleOrPerToken) {
  auto per_sample = accel::load_jsonl_sequences(
      write_temp("ps.jsonl", "{\"input_ids\": [1, 2], \"label\": 1}\n{\"input_ids\": [3], \"label\": 0}\n"),
      "input_ids", "label");
  EXPECT_EQ(per_sample.label_kind, accel::LabelKind::PerSample);
  EXPECT_EQ(as_vector(per_sample.labels), (std::vector<int64_t>{1, 0}));
  auto per_token = accel::load_jsonl_sequences(write_temp("pt.jsonl", "{\"input_ids\": [1, 2], \"tags\": [3, 4]}\n"),
                                               "input_ids", "tags");
  EXPECT_EQ(per_token.label_kind, accel::LabelKind::PerToken);
  EXPECT_EQ(as_vector(per_token.labels), (std::vector<int64_t>{3, 4}));
}

TEST(TokenSequences, JsonlErrorsNameFileLineAndValue) {
  auto bad = [](const std::string& text, int64_t vocab = 0, const std::string& labels = "") {
    auto path = write_temp("bad.jsonl", "{\"input_ids\": [1]}\n" + text + "\n");
    EXPECT_EQ(code_of([&] { accel::load_jsonl_sequences(path, "input_ids", labels, vocab); }), accel::ErrorCode::IO);
    return error_of([&] { accel::load_jsonl_sequences(path, "input_ids", labels, vocab); });
  };
  EXPECT_NE(bad("{\"input_ids\": [1, 2.5]}").find("bad.jsonl:2: 'input_ids'[1] = 2.5 is not an integer id"),
            std::string::npos);
  EXPECT_NE(bad("{\"ids\": [1]}").find("bad.jsonl:2: no key 'input_ids'"), std::string::npos);
  EXPECT_NE(bad("{\"input_ids\": [-3]}").find(":2: 'input_ids'[0] = -3 is negative"), std::string::npos);
  EXPECT_NE(bad("{\"input_ids\": [1, 50]}", 50).find(":2: 'input_ids'[1] = 50 is not below the vocab size 50"),
            std::string::npos);
  EXPECT_NE(bad("{\"input_ids\": [true]}").find("= true is not an integer id"), std::string::npos);
  EXPECT_NE(bad("{\"input_ids\": [1,").find("bad.jsonl:2 is not valid JSON"), std::string::npos);
  EXPECT_NE(bad("{\"input_ids\": [1], \"y\": [1, 2]}", 0, "y").find(":1: no key 'y'"), std::string::npos);
  auto path = write_temp("len.jsonl", "{\"input_ids\": [1], \"y\": [1, 2]}\n");
  EXPECT_NE(
      error_of([&] { accel::load_jsonl_sequences(path, "input_ids", "y"); }).find(":1: 'y' has 2 labels for 1 ids"),
      std::string::npos);
  EXPECT_NE(error_of([&] { accel::load_jsonl_sequences(write_temp("empty.jsonl", "\n")); }).find("holds no sequence"),
            std::string::npos);
  EXPECT_NE(error_of([&] { accel::load_jsonl_sequences(::testing::TempDir() + "missing.jsonl"); }).find("cannot open"),
            std::string::npos);
}

std::vector<std::string> texts(const accel::TokenSequences& s) {
  std::vector<std::string> out;
  for (int64_t i = 0; i < s.size(); ++i) {
    std::string text;
    for (int64_t k = s.offsets[i].item<int64_t>(); k < s.offsets[i + 1].item<int64_t>(); ++k) {
      text += static_cast<char>(s.ids[k].item<int64_t>());
    }
    out.push_back(text);
  }
  return out;
}

TEST(TokenSequences, TextSplitRules) {
  auto path = write_temp("text.txt",
                         "ab\r\n\ncd\n%\n\xff"
                         "e\n%\n");
  accel::TextSplit split;
  EXPECT_EQ(texts(accel::load_text_sequences(path, split)), (std::vector<std::string>{"ab", "cd", "%",
                                                                                      "\xff"
                                                                                      "e",
                                                                                      "%"}));
  split.rule = accel::TextSplit::Rule::Paragraphs;
  EXPECT_EQ(texts(accel::load_text_sequences(path, split)), (std::vector<std::string>{"ab\r\n",
                                                                                      "cd\n%\n\xff"
                                                                                      "e\n%\n"}));
  split.rule = accel::TextSplit::Rule::Separator;
  EXPECT_EQ(texts(accel::load_text_sequences(path, split)), (std::vector<std::string>{"ab\r\n\ncd\n",
                                                                                      "\xff"
                                                                                      "e\n"}));
  EXPECT_EQ(accel::load_text_sequences(path, split).ids[8].item<int64_t>(), 255);  // bytes are unsigned ids
  split.rule = accel::TextSplit::Rule::Chunks;
  split.chunk_length = 4;
  split.stride = 6;
  auto chunks = texts(accel::load_text_sequences(write_temp("c.txt", "0123456789abcd"), split));
  EXPECT_EQ(chunks, (std::vector<std::string>{"0123", "6789", "cd"}));
  split.stride = 0;
  EXPECT_EQ(texts(accel::load_text_sequences(write_temp("c2.txt", "01234567"), split)),
            (std::vector<std::string>{"0123", "4567"}));
  split.chunk_length = 0;
  EXPECT_EQ(code_of([&] { accel::load_text_sequences(path, split); }), accel::ErrorCode::InvalidArgument);
  split.rule = accel::TextSplit::Rule::Lines;
  EXPECT_NE(
      error_of([&] { accel::load_text_sequences(write_temp("blank.txt", "\n\n"), split); }).find("yields no sample"),
      std::string::npos);
}

TEST(TokenSequences, SafetensorsFlatIdsAndOffsets) {
  std::vector<int32_t> ids{3, 4, 5, 6};
  std::vector<int64_t> offsets{0, 1, 4};
  std::vector<float> floats{1.0f};
  auto write = [&](const std::string& name, std::vector<int64_t> offs) {
    std::vector<accel::safetensors::TensorView> views{
        {"input_ids", "I32", {4}, ids.data(), ids.size() * 4},
        {"offsets", "I64", {static_cast<int64_t>(offs.size())}, offs.data(), offs.size() * 8},
        {"f", "F32", {1}, floats.data(), 4}};
    return write_temp(name, accel::safetensors::serialize(views));
  };
  auto s = accel::load_safetensors_sequences(write("ok.safetensors", offsets));
  EXPECT_EQ(s.lengths(), (std::vector<int64_t>{1, 3}));
  EXPECT_EQ(s.ids.scalar_type(), at::kLong);
  auto bad_offsets = write("bad.safetensors", {0, 3, 2});
  EXPECT_NE(error_of([&] {
              accel::load_safetensors_sequences(bad_offsets);
            }).find("bad.safetensors: token sequences: offsets[2] = 2 is less than offsets[1] = 3"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              accel::load_safetensors_sequences(write("v.safetensors", offsets), "input_ids", "offsets", "", 6);
            }).find("sequence 1, position 2: id 6 is not below the vocab size 6"),
            std::string::npos);
  EXPECT_NE(
      error_of([&] { accel::load_safetensors_sequences(write("f.safetensors", offsets), "f"); }).find("tensor 'f' in "),
      std::string::npos);
  EXPECT_NE(error_of([&] {
              accel::load_safetensors_sequences(write("m.safetensors", offsets), "nope");
            }).find("has no tensor 'nope'"),
            std::string::npos);
}

TEST(Padding, PadsToTheLongestWithMaskAndCausalLabels) {
  accel::PaddingOptions options;
  options.pad_id = 0;
  accel::SequenceDataset dataset(three(), options);
  EXPECT_EQ(dataset.field_names(), (std::vector<std::string>{"input_ids", "attention_mask", "labels"}));
  accel::Batch batch = dataset.get_batch({1, 2});
  EXPECT_TRUE(at::equal(batch[0], longs({8, 0, 9, 0}).view({2, 2})));
  EXPECT_TRUE(at::equal(batch[1], longs({1, 0, 1, 1}).view({2, 2})));
  // The real token 0 (== pad_id) keeps its label; only the padding is -100.
  EXPECT_TRUE(at::equal(batch[2], longs({8, -100, 9, 0}).view({2, 2})));
  options.pad_to_multiple_of = 4;
  options.causal_lm_labels = false;
  options.pad_id = 1;
  accel::SequenceDataset rounded(three(), options);
  EXPECT_EQ(rounded.field_names().size(), 2u);
  batch = rounded.get_batch({0});
  EXPECT_TRUE(at::equal(batch[0], longs({5, 6, 7, 1}).view({1, 4})));
}

TEST(Padding, MaxLengthTruncatesOrRefuses) {
  accel::PaddingOptions options;
  options.max_length = 2;
  accel::SequenceDataset refusing(three(), options);
  EXPECT_EQ(refusing.get_batch({1, 2})[0].size(1), 2);
  EXPECT_NE(error_of([&] {
              refusing.get_batch({1, 0});
            }).find("sample 0 has 3 tokens, more than max_length 2"),
            std::string::npos);
  options.truncate = true;
  accel::SequenceDataset cutting(three(), options);
  auto batch = cutting.get_batch({0});
  EXPECT_TRUE(at::equal(batch[0], longs({5, 6}).view({1, 2})));
  EXPECT_TRUE(at::equal(batch[2], longs({5, 6}).view({1, 2})));
  options.pad_id = -1;
  EXPECT_NE(error_of([&] { accel::SequenceDataset(three(), options); }).find("pad_id must not be negative, got -1"),
            std::string::npos);
}

TEST(Padding, DatasetLabelsArePaddedWithIgnoreIndex) {
  auto per_token = accel::make_token_sequences(longs({5, 6, 7}), longs({0, 2, 3}), longs({1, 2, 3}));
  auto batch = accel::SequenceDataset(per_token, accel::PaddingOptions{}).get_batch({1, 0});
  EXPECT_TRUE(at::equal(batch[2], longs({3, -100, 1, 2}).view({2, 2})));
  auto per_sample = accel::make_token_sequences(longs({5, 6, 7}), longs({0, 2, 3}), longs({4, 9}));
  batch = accel::SequenceDataset(per_sample, accel::PaddingOptions{}).get_batch({1, 0});
  EXPECT_TRUE(at::equal(batch[2], longs({9, 4})));
}

TEST(TokenSequences, MakeRefusesBadOffsetsAndIds) {
  EXPECT_NE(error_of([] {
              accel::make_token_sequences(longs({1, -2}), longs({0, 2}));
            }).find("sequence 0, position 1: id -2 is negative"),
            std::string::npos);
  EXPECT_NE(error_of([] {
              accel::make_token_sequences(longs({1}), longs({0, 2}));
            }).find("the last offset is 2"),
            std::string::npos);
  EXPECT_NE(error_of([] {
              accel::make_token_sequences(at::ones({2}), longs({0, 2}));
            }).find("1-D int64"),
            std::string::npos);
  EXPECT_NE(error_of([] {
              accel::make_token_sequences(longs({1}), longs({0, 1}), longs({1, 2, 3}));
            }).find("labels has 3 entries"),
            std::string::npos);
}

TEST(Collate, CallerFunctionGetsTheSamplesAndItsShapesAreChecked) {
  std::vector<int64_t> seen;
  auto collate = [&seen](const std::vector<accel::SequenceSample>& samples) {
    int64_t total = 0;
    for (const auto& s : samples) {
      seen.push_back(s.index);
      total += s.input_ids.numel();
    }
    return accel::Batch{at::full({static_cast<int64_t>(samples.size())}, total, at::kLong)};
  };
  accel::SequenceDataset dataset(three(), {"total"}, collate);
  EXPECT_EQ(dataset.field_names(), (std::vector<std::string>{"total"}));
  EXPECT_TRUE(at::equal(dataset.get_batch({2, 0})[0], longs({5, 5})));
  EXPECT_EQ(seen, (std::vector<int64_t>{2, 0}));
  accel::SequenceDataset ragged(three(), {"input_ids"}, [](const std::vector<accel::SequenceSample>&) {
    return accel::Batch{at::zeros({3, 4}, at::kLong)};
  });
  EXPECT_NE(error_of([&] {
              ragged.get_batch({0, 1});
            }).find("field 'input_ids' has shape [3, 4], expected [2, ...]"),
            std::string::npos);
  accel::SequenceDataset short_of(three(), {"a", "b"}, [](const std::vector<accel::SequenceSample>& s) {
    return accel::Batch{at::zeros({static_cast<int64_t>(s.size())})};
  });
  EXPECT_NE(error_of([&] { short_of.get_batch({0}); }).find("returned 1 tensors for the 2 field names"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              accel::SequenceDataset(three(), {"a", "a"}, collate);
            }).find("'a' repeats"),
            std::string::npos);
}

TEST(LengthGrouped, MatchesTransformersGetLengthGroupedIndices) {
  std::vector<int64_t> lengths;
  for (int64_t i = 0; i < 37; ++i) lengths.push_back((i * 7) % 13 + 1);
  // transformers 4.49 get_length_grouped_indices(lengths, 4, generator=torch.Generator().manual_seed(5))
  std::vector<int64_t> expected{24, 27, 12, 10, 8,  4,  30, 0, 20, 33, 1, 25, 23, 21, 26, 13, 22, 16, 34,
                                19, 32, 17, 15, 28, 31, 35, 9, 7,  18, 3, 36, 6,  11, 5,  29, 14, 2};
  auto batches = accel::length_grouped_batches(lengths, 4, 5);
  ASSERT_EQ(batches.size(), 10u);
  std::vector<int64_t> flat;
  for (const auto& b : batches) flat.insert(flat.end(), b.begin(), b.end());
  EXPECT_EQ(flat, expected);
  EXPECT_EQ(batches.back().size(), 1u);
  EXPECT_EQ(accel::length_grouped_batches(lengths, 4, 5, true).size(), 9u);
  EXPECT_EQ(code_of([&] { accel::length_grouped_batches(lengths, 0, 5); }), accel::ErrorCode::InvalidArgument);
  // The sampler iterated again (a Trainer's next epoch) draws from the same
  // generator: transformers 4.49, the same call twice and three times on one
  // torch.Generator().manual_seed(5).
  std::vector<std::vector<int64_t>> later{{24, 9,  3,  27, 23, 10, 6,  15, 11, 33, 29, 16, 12, 8, 2,  28, 35, 18, 1,
                                           36, 34, 30, 4,  26, 22, 20, 5,  31, 14, 17, 13, 0,  7, 25, 21, 32, 19},
                                          {24, 20, 5,  16, 25, 4,  28, 0, 9, 7,  12, 36, 10, 21, 32, 26, 11, 22, 33,
                                           31, 14, 27, 23, 15, 18, 29, 3, 1, 34, 19, 17, 2,  35, 8,  6,  30, 13}};
  for (uint64_t epoch = 1; epoch <= 2; ++epoch) {
    std::vector<int64_t> drawn;
    for (const auto& b : accel::length_grouped_batches(lengths, 4, 5, false, epoch)) {
      drawn.insert(drawn.end(), b.begin(), b.end());
    }
    EXPECT_EQ(drawn, later[epoch - 1]) << "epoch " << epoch;
  }
}

std::vector<std::vector<int64_t>> epoch_ids(accel::DataLoader& loader) {
  std::vector<std::vector<int64_t>> out;
  while (auto batch = loader.next()) out.push_back(as_vector((*batch)[0]));
  return out;
}

accel::TokenSequences ragged(int64_t n) {  // sequence i: i % 5 + 1 copies of i + 1
  std::vector<int64_t> ids, offsets{0};
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t k = 0; k <= i % 5; ++k) ids.push_back(i + 1);
    offsets.push_back(static_cast<int64_t>(ids.size()));
  }
  return accel::make_token_sequences(longs(ids), longs(offsets));
}

TEST(SequenceLoader, ShardsEachProcessPaddingItsOwnBatch) {
  auto dataset = std::make_shared<accel::SequenceDataset>(ragged(10), accel::PaddingOptions{});
  accel::DataLoaderOptions options;
  options.batch_size = 2;
  std::vector<std::vector<std::vector<int64_t>>> per_rank;
  for (int p = 0; p < 2; ++p) {
    accel::DataLoader loader(dataset, options);
    accel::ShardPlacement placement;
    placement.num_processes = 2;
    placement.process_index = p;
    placement.gradient_state = std::make_shared<accel::GradientState>();
    loader.shard(placement);
    EXPECT_EQ(loader.field_names(), dataset->field_names());
    per_rank.push_back(epoch_ids(loader));
  }
  // Accelerate's BatchSamplerShard: rank 0 gets batches 0, 2, 4, rank 1
  // batches 1, 3 and batch 0 again (even_batches).
  EXPECT_EQ(per_rank[0][0], (std::vector<int64_t>{1, 0, 2, 2}));
  EXPECT_EQ(per_rank[1][0], (std::vector<int64_t>{3, 3, 3, 0, 4, 4, 4, 4}));
  EXPECT_EQ(per_rank[0].size(), 3u);
  EXPECT_EQ(per_rank[1].size(), 3u);
}

TEST(SequenceLoader, WorkersAndResumeGiveTheSameBatches) {
  auto dataset = std::make_shared<accel::SequenceDataset>(ragged(23), accel::PaddingOptions{});
  accel::DataLoaderOptions options;
  options.batch_size = 3;
  options.shuffle = true;
  options.seed = 11;
  accel::DataLoader plain(dataset, options);
  auto expected = epoch_ids(plain);
  options.num_workers = 2;
  accel::DataLoader workers(dataset, options);
  EXPECT_EQ(epoch_ids(workers), expected);
  accel::DataLoader first(dataset, options);
  first.next();
  first.next();
  auto position = first.position();
  accel::DataLoader resumed(dataset, options);
  resumed.resume_from(position);
  auto rest = epoch_ids(resumed);
  EXPECT_EQ(rest, std::vector<std::vector<int64_t>>(expected.begin() + 2, expected.end()));
}

}  // namespace

namespace {

TEST(SequenceLoader, DispatchRefusesToCompleteARaggedLastBatchByName) {
  auto dataset = std::make_shared<accel::SequenceDataset>(ragged(5), accel::PaddingOptions{});
  accel::DataLoaderOptions options;
  options.batch_size = 2;
  accel::DataLoader loader(dataset, options);
  accel::ShardPlacement placement;
  placement.num_processes = 2;
  placement.process_index = 0;
  placement.gradient_state = std::make_shared<accel::GradientState>();
  placement.dispatch = [](std::optional<accel::Batch> batch) { return batch; };  // the main process's view
  loader.shard(placement);
  std::string message = error_of([&] {
    while (loader.next()) {
    }
  });
  EXPECT_NE(message.find("dispatch_batches: field 0 of the short last batch has shape [1, 5] and of the first "
                         "batch [4, 4]"),  // global batches of batch_size * processes
            std::string::npos)
      << message;
}

}  // namespace
