package org.libaccel;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Map;
import org.junit.jupiter.api.Test;

/** FSDP options from Java and held bytes, on one process (the dist tests shard for real). */
class ShardingOptionsTest {
  @Test
  void anUnknownStateDictTypeIsRefusedNamingIt() {
    AccelException e = assertThrows(AccelException.class,
        () -> new AcceleratorBuilder().cpu(true).fsdpStateDictType("LOCAL_STATE_DICT").build());
    assertTrue(e.getMessage().contains("fsdp_state_dict_type \"LOCAL_STATE_DICT\" is not"), e.getMessage());
    new AcceleratorBuilder().cpu(true).fsdpStateDictType("SHARDED_STATE_DICT").build().close();
  }

  @Test
  void checkpointingNeedsFullShardAndHeldBytesCountsParameters() {
    AccelException e = assertThrows(AccelException.class, () -> new AcceleratorBuilder().cpu(true)
        .shardingStrategy("SHARD_GRAD_OP").fsdpActivationCheckpointing(true).build());
    assertTrue(e.getMessage().contains("fsdp_activation_checkpointing"), e.getMessage());
    try (Accelerator acc = new AcceleratorBuilder().cpu(true).shardingStrategy("FULL_SHARD")
             .fsdpMinNumParams(1000).fsdpActivationCheckpointing(true).build();
         Model model = Model.fromJson("[{\"type\": \"Linear\", \"in_features\": 4, \"out_features\": 3}]")) {
      acc.prepare(model);
      Map<String, Long> held = acc.heldBytes(model, null);
      assertEquals(60L, held.get("parameters"));
      assertEquals(0L, held.get("gradients"));
      assertEquals(0L, held.get("optimizer_state"));
    }
    AccelException empty = assertThrows(AccelException.class, () -> new AcceleratorBuilder().cpu(true)
        .fsdpTransformerLayerClsToWrap("GPT2Block", "").build());
    assertTrue(empty.getMessage().contains("fsdp_transformer_layer_cls_to_wrap"), empty.getMessage());
    try (Accelerator acc = new AcceleratorBuilder().cpu(true).shardingStrategy("FULL_SHARD")
             .fsdpTransformerLayerClsToWrap("GPT2Block", "transformer.h.0")
             .fsdpBackwardPrefetch(false).fsdpForwardPrefetch(true).build()) {
      assertEquals(1, acc.numProcesses());
      assertFalse(acc.cpuOffload());
    }
    // CPU offload: one process then shards over a world of one; NO_SHARD has nothing to offload.
    try (Accelerator acc = new AcceleratorBuilder().cpu(true).shardingStrategy("SHARD_GRAD_OP").cpuOffload(true).build()) {
      assertTrue(acc.cpuOffload());
    }
    AccelException noShard = assertThrows(AccelException.class, () -> new AcceleratorBuilder().cpu(true)
        .shardingStrategy("NO_SHARD").cpuOffload(true).build());
    assertTrue(noShard.getMessage().contains("sharding_strategy is NO_SHARD"), noShard.getMessage());
  }
}
