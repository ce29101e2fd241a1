// Bundled network definitions against reference parameter counts, FLOPs and the B-Caffe log;
// the loader's validation errors.
#include "dagsgd/model/network.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "dagsgd/model/io.h"
#include "dagsgd/model/paths.h"

namespace dagsgd::model {
namespace {

const Network& bundled(const std::string& name) {
  static std::map<std::string, Network> cache;
  auto it = cache.find(name);
  if (it == cache.end()) {
    auto net = load_network(name);
    if (!net) ADD_FAILURE() << net.error().message;
    it = cache.emplace(name, net ? *net : Network{}).first;
  }
  return it->second;
}

double flops_of_types(const Network& net, const std::vector<std::string>& types) {
  double f = 0;
  for (const Layer& l : net.layers) {
    if (std::find(types.begin(), types.end(), l.type) != types.end()) f += l.forward_flops;
  }
  return f;
}

// Reference totals: torchvision's documented num_params, Hugging Face BertModel, and the
// dagsgd-defined MLPs (784*4096+4096 + 2*(4096*4096+4096) + 4096*10+10, etc.).
TEST(BundledNetworks, ParameterTotalsMatchReferences) {
  const std::map<std::string, std::int64_t> expected = {
      {"alexnet", 61'100'840},         {"googlenet", 6'624'904},    {"googlenet-aux", 13'004'888},
      {"googlenet-caffe", 13'378'280}, {"resnet50", 25'557'032},    {"vgg16", 138'357'544},
      {"bert-base", 109'482'240},      {"bert-large", 335'141'888}, {"fc-wide", 36'818'954},
      {"fc-small", 235'146},
  };
  for (const auto& [name, params] : expected) {
    const Network& net = bundled(name);
    EXPECT_EQ(net.name, name);
    EXPECT_EQ(net.param_elements(), params) << name;
    EXPECT_FALSE(net.source.empty()) << name;
    EXPECT_FALSE(net.description.empty()) << name;
  }
}

TEST(BundledNetworks, NamesComeFromTheDirectorySorted) {
  std::vector<std::string> names = bundled_network_names();
  EXPECT_TRUE(std::is_sorted(names.begin(), names.end()));
  for (const char* n : {"alexnet", "bert-base", "bert-large", "fc-small", "fc-wide", "googlenet",
                        "googlenet-aux", "googlenet-caffe", "resnet50", "vgg16"}) {
    EXPECT_NE(std::find(names.begin(), names.end(), n), names.end()) << n;
  }
}

TEST(BundledNetworks, EveryBundledFileLoadsAndHasUniqueLayerNames) {
  for (const std::string& name : bundled_network_names()) {
    auto net = load_network(name);
    ASSERT_TRUE(net.ok()) << net.error().message;
    EXPECT_EQ(net->name, name) << "file name and 'name' differ";
    EXPECT_GT(net->forward_flops(), 0) << name;
  }
}

// conv and fc FLOPs must follow from the weight shape and the output size:
// conv 2*Cin/g*Kh*Kw*Cout*Ho*Wo = 2*|W|*(Ho*Wo); fc 2*in*out*tokens = 2*|W|*tokens.
TEST(BundledNetworks, ConvAndFcFlopsFollowFromShapes) {
  for (const std::string& name : bundled_network_names()) {
    const Network& net = bundled(name);
    for (const Layer& l : net.layers) {
      if (l.type != "conv" && l.type != "fc") continue;
      ASSERT_FALSE(l.params.empty()) << name << " " << l.name;
      const ParamTensor& w = l.params[0];
      ASSERT_EQ(w.name, "weight") << name << " " << l.name;
      std::int64_t out_channels = w.shape[0];
      ASSERT_EQ(l.activation_elements % out_channels, 0) << name << " " << l.name;
      double positions = static_cast<double>(l.activation_elements / out_channels);
      EXPECT_DOUBLE_EQ(l.forward_flops, 2.0 * static_cast<double>(w.elements()) * positions)
          << name << " " << l.name;
    }
  }
}

// torchvision documents GFLOPS as multiply-adds: ResNet-50 4.09, AlexNet 0.71, VGG-16 15.47,
// GoogLeNet 1.50. Ours count 2 FLOPs per multiply-add.
TEST(BundledNetworks, FlopsMatchPublishedMultiplyAdds) {
  const std::map<std::string, double> gmacs = {
      {"resnet50", 4.09}, {"alexnet", 0.71}, {"vgg16", 15.47}, {"googlenet", 1.50}};
  for (const auto& [name, g] : gmacs) {
    double conv_fc = flops_of_types(bundled(name), {"conv", "fc"});
    EXPECT_NEAR(conv_fc / 2e9, g, 0.01 * g) << name;
  }
  // All layers together (BN, ReLU, pooling, adds included) stay within a few % of 8.2 GFLOP.
  EXPECT_NEAR(bundled("resnet50").forward_flops() / 1e9, 8.2, 0.03 * 8.2);
  // BERT-base at 128 tokens: ~2 FLOPs per weight per token for the 85M encoder weights,
  // plus attention scores; about 22 GFLOP.
  EXPECT_NEAR(bundled("bert-base").forward_flops() / 1e9, 22.4, 0.05 * 22.4);
}

TEST(BundledNetworks, FcWideIsATrainableMlpForFashionMnist) {
  for (const char* name : {"fc-wide", "fc-small"}) {
    const Network& net = bundled(name);
    ASSERT_EQ(net.input_shape, std::vector<std::int64_t>{784}) << name;
    std::int64_t width = 784;
    for (std::size_t i = 0; i < net.layers.size(); ++i) {
      const Layer& l = net.layers[i];
      if (i % 2 == 1) {
        EXPECT_EQ(l.type, "relu") << name << " " << l.name;
        continue;
      }
      ASSERT_EQ(l.type, "fc") << name << " " << l.name;
      ASSERT_EQ(l.params.size(), 2u);
      EXPECT_EQ(l.params[0].shape[1], width) << name << " " << l.name;
      width = l.params[0].shape[0];
      EXPECT_EQ(l.params[1].shape, std::vector<std::int64_t>{width});
    }
    EXPECT_EQ(net.layers.back().type, "fc") << name;
    EXPECT_EQ(width, 10) << name;
  }
  EXPECT_GE(bundled("fc-wide").param_elements(), 10'000'000);
}

struct LogEntry {
  int param_id;
  std::int64_t n_elements;
  double backward_us;
};

// B-Caffe's glog lines: "... distributed.cpp:112] [id, n, backward_us, allreduce_us(, merged)]".
std::vector<LogEntry> read_bcaffe_log(const std::string& path) {
  std::vector<LogEntry> out;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    auto open = line.rfind('[');
    if (open == std::string::npos || line.find("distributed.cpp") == std::string::npos) continue;
    std::string body = line.substr(open + 1);
    std::replace(body.begin(), body.end(), ',', ' ');
    std::istringstream ss(body);
    LogEntry e{};
    if (ss >> e.param_id >> e.n_elements >> e.backward_us) out.push_back(e);
  }
  return out;
}

// The logs report NVCaffe's lp_aligned_count: the tensor's element count rounded up to a
// multiple of 64 (align_up<6>), so a 96-element bias appears as 128.
std::int64_t align64(std::int64_t n) { return (n + 63) / 64 * 64; }

TEST(GoogLeNetCaffe, TensorsMatchTheBCaffeLogOneToOne) {
  const Network& net = bundled("googlenet-caffe");
  struct Tensor {
    std::int64_t elements;
    std::size_t layer;
  };
  std::vector<Tensor> tensors;
  for (std::size_t i = 0; i < net.layers.size(); ++i) {
    for (const ParamTensor& p : net.layers[i].params) tensors.push_back({p.elements(), i});
  }
  ASSERT_EQ(tensors.size(), 128u);

  const std::string dir = std::string(DAGSGD_SHARED_DATA) + "/published/b-caffe";
  int files = 0;
  for (const char* file : {"tmpcomm.log", "tmp2comm.log", "tmp4comm.log", "tmp8comm.log",
                           "tmp4ocomm.log", "tmp8ocomm.log"}) {
    const std::string path = dir + "/" + file;
    if (!file_exists(path)) continue;
    ++files;
    std::vector<LogEntry> log = read_bcaffe_log(path);
    ASSERT_FALSE(log.empty()) << path;
    ASSERT_EQ(log.size() % 128, 0u) << path;  // one or two dumps of all 128 tensors
    std::int64_t log_total = 0;
    for (std::size_t k = 0; k < log.size(); ++k) {
      const LogEntry& e = log[k];
      const Tensor& t = tensors[k % 128];
      ASSERT_EQ(e.param_id, static_cast<int>(k % 128)) << path << " line " << k + 1;
      EXPECT_EQ(align64(t.elements), e.n_elements)
          << path << " param_id " << e.param_id << " layer " << net.layers[t.layer].name;
      if (k < 128) log_total += e.n_elements;
      // A weight and its bias belong to one Caffe layer, so the log gives both the same
      // backward time; this checks that our grouping of tensors into layers is Caffe's.
      if (k % 128 > 0 && tensors[k % 128 - 1].layer == t.layer) {
        EXPECT_EQ(log[k - 1].backward_us, e.backward_us) << path << " param_id " << e.param_id;
      }
    }
    EXPECT_EQ(log_total, 13'379'136) << path;
  }
  if (files == 0) GTEST_SKIP() << "no B-Caffe logs under " << dir;
}

// ---- validation --------------------------------------------------------------------------

nlohmann::json valid_doc() {
  return nlohmann::json::parse(R"({
    "name": "tiny", "description": "two layers", "source": "test", "input_shape": [4],
    "layers": [
      {"name": "a", "type": "fc", "params": [{"name": "weight", "shape": [3, 4]}],
       "forward_flops": 24, "activation_elements": 3},
      {"name": "b", "type": "fc", "params": [{"name": "weight", "shape": [2, 3]},
                                             {"name": "bias", "shape": [2]}],
       "forward_flops": 12, "activation_elements": 2}
    ]})");
}

std::string error_of(const nlohmann::json& doc) {
  auto net = parse_network_json(doc.dump(), "bad.json");
  if (net.ok()) return "(no error)";
  return net.error().message;
}

TEST(NetworkValidation, ValidDocumentParses) {
  auto net = parse_network_json(valid_doc().dump(), "tiny.json");
  ASSERT_TRUE(net.ok()) << net.error().message;
  EXPECT_EQ(net->layers.size(), 2u);
  EXPECT_EQ(net->param_elements(), 12 + 6 + 2);
  EXPECT_DOUBLE_EQ(net->forward_flops(), 36);
  EXPECT_EQ(net->layers[1].param_elements(), 8);
}

TEST(NetworkValidation, EachMalformedLayerNamesFileLayerAndField) {
  struct Case {
    const char* what;
    void (*mutate)(nlohmann::json&);
    const char* expect;
  };
  const Case cases[] = {
      {"missing flops", [](nlohmann::json& d) { d["layers"][1].erase("forward_flops"); },
       "missing field 'forward_flops'"},
      {"flops string", [](nlohmann::json& d) { d["layers"][1]["forward_flops"] = "12"; },
       "'forward_flops' must be a number, got string"},
      {"negative flops", [](nlohmann::json& d) { d["layers"][1]["forward_flops"] = -5; },
       "'forward_flops' is negative (-5)"},
      {"zero dim", [](nlohmann::json& d) { d["layers"][1]["params"][0]["shape"][1] = 0; },
       "params[0] 'weight': 'shape'[1] is 0; dimensions must be positive"},
      {"negative dim", [](nlohmann::json& d) { d["layers"][1]["params"][1]["shape"][0] = -2; },
       "params[1] 'bias': 'shape'[0] is -2"},
      {"float dim", [](nlohmann::json& d) { d["layers"][1]["params"][0]["shape"][0] = 2.5; },
       "'shape'[0] must be an integer, got number (2.5)"},
      {"empty shape",
       [](nlohmann::json& d) { d["layers"][1]["params"][0]["shape"] = nlohmann::json::array(); },
       "'shape' is empty"},
      {"missing type", [](nlohmann::json& d) { d["layers"][1].erase("type"); },
       "missing field 'type'"},
      {"type not string", [](nlohmann::json& d) { d["layers"][1]["type"] = 7; },
       "'type' must be a string, got integer"},
      {"params object",
       [](nlohmann::json& d) {
         d["layers"][1]["params"] = {{"x", 1}};
       },
       "'params' must be an array, got object"},
      {"missing params", [](nlohmann::json& d) { d["layers"][1].erase("params"); },
       "missing field 'params'"},
      {"duplicate param", [](nlohmann::json& d) { d["layers"][1]["params"][1]["name"] = "weight"; },
       "duplicate parameter name 'weight'"},
      {"activation negative", [](nlohmann::json& d) { d["layers"][1]["activation_elements"] = -1; },
       "'activation_elements' is -1"},
      {"activation float", [](nlohmann::json& d) { d["layers"][1]["activation_elements"] = 1.5; },
       "'activation_elements' must be an integer"},
  };
  for (const Case& c : cases) {
    nlohmann::json doc = valid_doc();
    c.mutate(doc);
    std::string msg = error_of(doc);
    EXPECT_NE(msg.find("network 'bad.json': layer 1 'b': "), std::string::npos)
        << c.what << ": " << msg;
    EXPECT_NE(msg.find(c.expect), std::string::npos) << c.what << ": " << msg;
  }
}

TEST(NetworkValidation, DuplicateAndMissingLayerNames) {
  nlohmann::json doc = valid_doc();
  doc["layers"][1]["name"] = "a";
  EXPECT_NE(error_of(doc).find("layer 1 'a': duplicate layer name (also layer 0)"),
            std::string::npos)
      << error_of(doc);

  doc = valid_doc();
  doc["layers"][1].erase("name");
  EXPECT_NE(error_of(doc).find("network 'bad.json': layer 1: missing field 'name'"),
            std::string::npos)
      << error_of(doc);

  doc = valid_doc();
  doc["layers"][0] = 5;
  EXPECT_NE(error_of(doc).find("layer 0 must be an object, got integer"), std::string::npos)
      << error_of(doc);
}

TEST(NetworkValidation, TopLevelErrors) {
  nlohmann::json doc = valid_doc();
  doc["layers"] = nlohmann::json::array();
  EXPECT_NE(error_of(doc).find("network 'bad.json': 'layers' is empty"), std::string::npos)
      << error_of(doc);

  doc = valid_doc();
  doc.erase("layers");
  EXPECT_NE(error_of(doc).find("missing field 'layers'"), std::string::npos);

  doc = valid_doc();
  doc["input_shape"] = {3, 0};
  EXPECT_NE(error_of(doc).find("'input_shape'[1] is 0"), std::string::npos) << error_of(doc);

  doc = valid_doc();
  doc.erase("name");
  EXPECT_NE(error_of(doc).find("missing field 'name'"), std::string::npos);

  doc = valid_doc();
  doc["layers"][0]["params"][0]["shape"] = {std::int64_t{1} << 40, std::int64_t{1} << 40};
  EXPECT_NE(error_of(doc).find("more than 1e15 elements: out of range"), std::string::npos)
      << error_of(doc);

  auto bad_json = parse_network_json("{\"name\": \"x\",\n  \"layers\": [}", "broken.json");
  ASSERT_FALSE(bad_json.ok());
  EXPECT_NE(bad_json.error().message.find("network 'broken.json': not valid JSON"),
            std::string::npos)
      << bad_json.error().message;
  EXPECT_NE(bad_json.error().message.find("line 2"), std::string::npos) << bad_json.error().message;

  auto not_object = parse_network_json("[1, 2]", "list.json");
  ASSERT_FALSE(not_object.ok());
  EXPECT_NE(not_object.error().message.find("the top level must be an object"), std::string::npos);
}

// ---- lookup ------------------------------------------------------------------------------

TEST(NetworkLookup, UnknownNameListsBundledNames) {
  auto net = load_network("resnet-51");
  ASSERT_FALSE(net.ok());
  const std::string& msg = net.error().message;
  EXPECT_NE(msg.find("unknown network 'resnet-51'"), std::string::npos) << msg;
  std::string list;
  for (const std::string& n : bundled_network_names()) list += (list.empty() ? "" : ", ") + n;
  EXPECT_NE(msg.find("bundled networks: " + list), std::string::npos) << msg;
  EXPECT_NE(msg.find("alexnet, bert-base"), std::string::npos) << msg;
}

TEST(NetworkLookup, APathThatIsNotBundledLoadsTheFile) {
  const std::string path =
      (std::filesystem::temp_directory_path() / "dagsgd_network_test_tiny.json").string();
  ASSERT_TRUE(write_file(path, valid_doc().dump(2), /*force=*/true).ok());
  auto net = load_network(path);
  ASSERT_TRUE(net.ok()) << net.error().message;
  EXPECT_EQ(net->name, "tiny");

  nlohmann::json doc = valid_doc();
  doc["layers"][0]["forward_flops"] = -1;
  ASSERT_TRUE(write_file(path, doc.dump(2), /*force=*/true).ok());
  auto bad = load_network(path);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("network '" + path + "': layer 0 'a'"), std::string::npos)
      << bad.error().message;
  std::filesystem::remove(path);

  auto missing = load_network_file("/nonexistent/net.json");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.error().message.find("/nonexistent/net.json"), std::string::npos);
}

TEST(NetworkLookup, BundledPathAndNameGiveTheSameNetwork) {
  auto by_path = load_network_file(data_path("networks/alexnet.json"));
  ASSERT_TRUE(by_path.ok()) << by_path.error().message;
  EXPECT_EQ(by_path->param_elements(), bundled("alexnet").param_elements());
  EXPECT_EQ(by_path->layers.size(), bundled("alexnet").layers.size());
}

// The hand-written example in docs/formats.md must stay a valid definition.
TEST(NetworkDocs, FormatsExampleLoads) {
  auto doc = read_file(std::string(DAGSGD_SOURCE_DIR) + "/docs/formats.md");
  ASSERT_TRUE(doc.ok()) << doc.error().message;
  const std::string fence = "```json\n";
  auto begin = doc->find(fence);
  ASSERT_NE(begin, std::string::npos);
  begin += fence.size();
  auto end = doc->find("```", begin);
  ASSERT_NE(end, std::string::npos);
  auto net = parse_network_json(doc->substr(begin, end - begin), "docs/formats.md example");
  ASSERT_TRUE(net.ok()) << net.error().message;
  EXPECT_EQ(net->param_elements(), 32 * 784 + 32 + 10 * 32 + 10);
}

// The committed JSON must be what tools/gen_networks.py writes today.
TEST(NetworkGenerator, CommittedFilesAreUpToDate) {
  if (std::system("python3 --version >/dev/null 2>&1") != 0) GTEST_SKIP() << "no python3";
  const std::string cmd = std::string("python3 ") + DAGSGD_SOURCE_DIR +
                          "/tools/gen_networks.py --check --out " + DAGSGD_SOURCE_DIR +
                          "/datasets/networks >/dev/null";
  EXPECT_EQ(std::system(cmd.c_str()), 0) << cmd;
}

}  // namespace
}  // namespace dagsgd::model
